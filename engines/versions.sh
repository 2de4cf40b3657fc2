# The engines' versions, read by install.sh and the cluster harness (tests/cluster/harness.py).
# Beam's Java modules for the job servers: the newest version whose Flink 1.19 runner, Spark 3 runner and
# job service Maven Central all serves (2.62.0). The Python SDK stays at setup.py's pin: every Beam
# Python release that matches 2.62 needs numpy < 2.3, and the fidelity pins hold numpy 2.4.6.
BEAM_JAVA_VERSION=2.62.0
FLINK_VERSION=1.19
FLINK_RELEASE=1.19.3
SPARK_RELEASE=3.5.3
