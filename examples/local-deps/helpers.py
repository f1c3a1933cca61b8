"""A local Python dependency shipped with --py-files (through the staging server)."""


def _stop_words(path):
    if not path:
        return set()
    with open(path) as listed:
        return set(listed.read().split())


def top_words(lines, n, stop_file=None):
    """The ``n`` most frequent words of ``lines``; an executor reads ``stop_file`` (a path in
    its working directory, e.g. an archive's alias) for words to leave out."""

    def words(part):
        skip = _stop_words(stop_file)
        for line in part:
            for raw in line.lower().split():
                word = raw.strip(".,;:!?")
                if word and word not in skip:
                    yield word

    counts = lines.mapPartitions(words).map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)
    return counts.takeOrdered(n, key=lambda pair: (-pair[1], pair[0]))
