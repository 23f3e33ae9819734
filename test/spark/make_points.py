"""Write a random LiDAR point cloud as Parquet, for lidar_clean.py.

    spark-submit make_points.py OUTPUT [POINTS]

POINTS (default 1000000) rows of float columns x, y, z and intensity,
from a fixed seed in two partitions, so the same on every machine; OUTPUT
is overwritten.
"""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

if len(sys.argv) not in (2, 3):
    sys.exit("usage: make_points.py OUTPUT [POINTS]")
dst, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 1_000_000
spark = SparkSession.builder.appName("LiDARPoints").getOrCreate()
# Two partitions, whatever the machine's cores: rand(seed) draws per
# partition, so the points (and what a clean keeps) depend on their number.
points = spark.range(0, n, 1, 2).select(
    (F.rand(1) * 200 - 100).cast("float").alias("x"),
    (F.rand(2) * 200 - 100).cast("float").alias("y"),
    (F.rand(3) * 10 - 2).cast("float").alias("z"),
    F.rand(4).cast("float").alias("intensity"),
)
points.write.mode("overwrite").parquet(dst)
print(f"points: wrote {n} points to {dst}", flush=True)
spark.stop()
