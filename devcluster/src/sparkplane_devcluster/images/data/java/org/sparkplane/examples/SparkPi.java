/*
 * SparkPi for sparkplane's Spark image: estimates pi by sampling random points in the unit square
 * and counting those inside the unit circle, in parallel across the given number of partitions.
 * Usage: SparkPi [partitions]. Prints "Pi is roughly <value>", the line Spark's own example prints.
 */
package org.sparkplane.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

public final class SparkPi {
  private SparkPi() {}

  public static void main(String[] args) {
    int partitions = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    long samplesPerPartition = 100_000L;
    SparkSession spark = SparkSession.builder().appName("Spark Pi").getOrCreate();
    try {
      JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<Integer> seeds = new ArrayList<>(partitions);
      for (int i = 0; i < partitions; i++) {
        seeds.add(i);
      }
      long inside = sc.parallelize(seeds, partitions)
          .map(seed -> countInside(samplesPerPartition))
          .reduce(Long::sum);
      double pi = 4.0 * inside / (samplesPerPartition * partitions);
      System.out.println("Pi is roughly " + pi);
    } finally {
      spark.stop();
    }
  }

  private static long countInside(long samples) {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    long inside = 0;
    for (long i = 0; i < samples; i++) {
      double x = random.nextDouble() * 2 - 1;
      double y = random.nextDouble() * 2 - 1;
      if (x * x + y * y <= 1) {
        inside++;
      }
    }
    return inside;
  }
}
