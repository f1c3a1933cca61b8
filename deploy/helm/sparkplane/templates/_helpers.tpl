{{/* The image every container runs. */}}
{{- define "sparkplane.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Labels of the operator's objects (as sparkplane.operator.deploy writes them). */}}
{{- define "sparkplane.operatorLabels" -}}
app.kubernetes.io/name: sparkplane-operator
app.kubernetes.io/part-of: sparkplane
{{- end }}

{{/* Labels of objects rendered from the RBAC catalogue for one identity. */}}
{{- define "sparkplane.rbacLabels" -}}
app.kubernetes.io/part-of: sparkplane
app.kubernetes.io/managed-by: sparkplane
app.kubernetes.io/component: {{ . }}
{{- end }}

{{/* Where the clean-up CronJob runs. */}}
{{- define "sparkplane.gcNamespaces" -}}
{{- $ns := .Values.gc.namespaces | default .Values.spark.jobNamespaces -}}
{{- toJson $ns -}}
{{- end }}
