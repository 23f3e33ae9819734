"""Clean a LiDAR point cloud: keep the points whose intensity is above 0.1,
and of them only x, y and z (the seed's LiDAR example, DESIGN.md §8 Spark).

    spark-submit lidar_clean.py INPUT OUTPUT

INPUT is Parquet with float columns x, y, z and intensity; OUTPUT is
written as Parquet (overwritten). Spark splits INPUT into partitions and
filters them in parallel: on atom's local backend on the driver's cores.
"""
import sys

from pyspark.sql import SparkSession


def main(src, dst):
    spark = SparkSession.builder.appName("LiDARProcessing").getOrCreate()
    # Step 1: read (Spark splits the files into partitions).
    df = spark.read.parquet(src)
    # Step 2: clean, each partition on its own.
    cleaned_df = df.filter(df["intensity"] > 0.1).select("x", "y", "z")
    # Step 3: write.
    cleaned_df.write.mode("overwrite").parquet(dst)
    kept = spark.read.parquet(dst).count()
    print(f"lidar: kept {kept} points in {dst} ({spark.sparkContext.defaultParallelism} threads)", flush=True)
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: lidar_clean.py INPUT OUTPUT")
    main(sys.argv[1], sys.argv[2])
