"""Count the words of a file that lives on the submitter's machine (examples/local-deps).

The submitter uploads this script, helpers.py and words.txt to the staging server; an
init-container puts them in /var/sparkplane/deps, and Spark runs them from there.
"""

import sys

from helpers import top_words
from pyspark.sql import SparkSession

if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "/var/sparkplane/deps/words.txt"
    spark = SparkSession.builder.appName("local-deps").getOrCreate()
    lines = spark.sparkContext.textFile(f"file://{path}")
    for word, count in top_words(lines, 5):
        print(f"{word}\t{count}")
    spark.stop()
