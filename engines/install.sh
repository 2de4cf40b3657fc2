#!/usr/bin/env bash
# `make engines`: the Flink and Spark engines and Beam's job servers for them, nothing fetched at run time.
#   - Flink and Spark from PyPI (apache-flink's scripts and config, apache-flink-libraries' jars, pyspark's
#     distribution) into ENGINES/flink-<release> and ENGINES/spark-<release>;
#   - Beam's job servers built by mvn from Maven Central's modules (engines/flink/pom.xml,
#     engines/spark/pom.xml) into Beam's jar cache, JAR_CACHE.
# Maven checks each artifact against the registry's checksum (-C); every archive and jar is then
# checked against engines/SHA256SUMS. Usage: engines/install.sh ENGINES JAR_CACHE PYTHON
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
engines="$1"; jar_cache="$2"; python="${3:-python3}"
. "$here/versions.sh"
mkdir -p "$engines/downloads" "$jar_cache"
engines="$(cd "$engines" && pwd)"
downloads="$engines/downloads"

check() {  # check FILE...: each file's SHA-256 against engines/SHA256SUMS
  for file in "$@"; do
    local name expected
    name="$(basename "$file")"
    expected="$(awk -v n="$name" '$2 == n {print $1}' "$here/SHA256SUMS")"
    if [ -z "$expected" ] || [ "$(sha256sum "$file" | cut -d' ' -f1)" != "$expected" ]; then
      echo "engines: $name: checksum mismatch or not listed in engines/SHA256SUMS" >&2
      rm -f "$file"
      exit 1
    fi
  done
}

"$python" -m pip download -q --no-deps --disable-pip-version-check -d "$downloads" \
  "apache-flink==$FLINK_RELEASE" "apache-flink-libraries==$FLINK_RELEASE" "pyspark==$SPARK_RELEASE"
check "$downloads"/apache_flink-"$FLINK_RELEASE"-*.whl "$downloads/apache-flink-libraries-$FLINK_RELEASE.tar.gz" \
      "$downloads/pyspark-$SPARK_RELEASE.tar.gz"

flink="$engines/flink-$FLINK_RELEASE"
if [ ! -x "$flink/bin/jobmanager.sh" ]; then
  rm -rf "$flink" "$flink.part" && mkdir -p "$flink.part"
  tar -xzf "$downloads/apache-flink-libraries-$FLINK_RELEASE.tar.gz" -C "$flink.part" --strip-components=2 \
    "apache-flink-libraries-$FLINK_RELEASE/deps"
  "$python" - "$downloads"/apache_flink-"$FLINK_RELEASE"-*.whl "$flink.part" <<'PY'
import sys, zipfile
wheel, into = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:  # the scripts and the default config of the distribution
    for member in archive.namelist():
        if member.startswith(("pyflink/bin/", "pyflink/conf/")) and not member.endswith("/"):
            archive.extract(member, into + "/wheel")
PY
  cp -r "$flink.part/wheel/pyflink/bin/." "$flink.part/bin/" && cp -r "$flink.part/wheel/pyflink/conf" "$flink.part/conf"
  rm -rf "$flink.part/wheel" && chmod +x "$flink.part"/bin/*.sh "$flink.part/bin/flink"
  mv "$flink.part" "$flink"
fi

spark="$engines/spark-$SPARK_RELEASE"
if [ ! -x "$spark/bin/spark-class" ]; then
  rm -rf "$spark" "$spark.part" && mkdir -p "$spark.part"
  tar -xzf "$downloads/pyspark-$SPARK_RELEASE.tar.gz" -C "$spark.part" --strip-components=2 "pyspark-$SPARK_RELEASE/deps"
  mv "$spark.part" "$spark"
fi

for runner in "flink-$FLINK_VERSION" spark-3; do
  jar="$jar_cache/beam-runners-$runner-job-server-$BEAM_JAVA_VERSION.jar"
  if [ ! -f "$jar" ]; then
    mvn -B -q -C -f "$here/${runner%%-*}/pom.xml" package -Djobserver.build="$engines/build/$runner" \
      -Djobserver.jar="$jar.part"
    mv "$jar.part" "$jar"
  fi
  check "$jar"
done
echo "engines: Flink $FLINK_RELEASE in $flink, Spark $SPARK_RELEASE in $spark, Beam $BEAM_JAVA_VERSION job servers in $jar_cache"
