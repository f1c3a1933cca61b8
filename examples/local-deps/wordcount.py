"""Count the words of a file that lives on the submitter's machine (examples/local-deps).

Written as for spark-submit: ``--files words.txt`` ships the text, which the driver finds with
``SparkFiles.get``; ``--archives stopwords.tgz#stop`` (optional) ships a stop-word list that
every executor finds unpacked under its alias, ``stop/``, in its working directory. With a
staging server sparkplane uploads them and Spark hands them out as spark-submit's upload path
would (docs/staging.md).
"""

import os
import sys

from helpers import top_words
from pyspark import SparkFiles
from pyspark.sql import SparkSession

if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "words.txt"
    stop_file = sys.argv[2] if len(sys.argv) > 2 else None  # e.g. stop/stopwords.txt
    spark = SparkSession.builder.appName("local-deps").getOrCreate()
    path = name if os.path.isabs(name) else SparkFiles.get(name)
    with open(path) as text:
        lines = spark.sparkContext.parallelize(text.read().splitlines(), 2)
    for word, count in top_words(lines, 5, stop_file):
        print(f"{word}\t{count}")
    spark.stop()
