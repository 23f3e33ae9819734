"""The seed's LiDAR clean (lidar_clean.py, beside this file, unchanged),
then an idle spell before the program's own spark.stop(), as a pipeline
waits between steps: with dynamic allocation, the driver lets idle
executors go.

    spark-submit lidar_idle.py INPUT OUTPUT IDLE_SECONDS [--until-released]

While it idles it prints the executors the driver has at each change
("lidar: N executors after S s idle") and, at the end, how many it kept
("lidar: idle S s with N executors"). --until-released ends the idle
spell early once no executor is left.
"""
import sys
import time

from pyspark.sql import SparkSession

import lidar_clean

_stop = SparkSession.stop


def executors(spark):
    return spark.sparkContext._jsc.sc().getExecutorIds().size()


def idle_then_stop(spark, seconds, until_released):
    start, last = time.time(), None
    while True:
        n, idle = executors(spark), time.time() - start
        if n != last:
            print(f"lidar: {n} executors after {idle:.1f} s idle", flush=True)
            last = n
        if idle >= seconds or (until_released and n == 0):
            break
        time.sleep(0.2)
    print(f"lidar: idle {idle:.1f} s with {n} executors", flush=True)
    _stop(spark)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--until-released"]
    if len(args) != 3:
        sys.exit("usage: lidar_idle.py INPUT OUTPUT IDLE_SECONDS [--until-released]")
    seconds, until = float(args[2]), "--until-released" in sys.argv[1:]
    SparkSession.stop = lambda spark: idle_then_stop(spark, seconds, until)
    lidar_clean.main(args[0], args[1])
