"""A local Python dependency shipped with --py-files (through the staging server)."""


def top_words(lines, n):
    counts = (
        lines.flatMap(lambda line: line.lower().split())
        .map(lambda word: (word.strip(".,;:!?"), 1))
        .reduceByKey(lambda a, b: a + b)
    )
    return counts.takeOrdered(n, key=lambda pair: (-pair[1], pair[0]))
