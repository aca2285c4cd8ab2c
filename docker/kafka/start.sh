#!/bin/sh
# The Kafka image's entry point.
#   With arguments: java with them (the harness runs its brokers so: it formats their storage itself).
#   Without: one KRaft node whose server.properties is the text of $KAFKA_PROPERTIES, its storage formatted
#   once with $KAFKA_CLUSTER_ID (docker-compose.yml); $KAFKA_HEAP_OPTS sets the heap.
set -eu
if [ "$#" -gt 0 ]; then
    exec java "$@"
fi
: "${KAFKA_PROPERTIES:?set KAFKA_PROPERTIES to the broker's server.properties}"
: "${KAFKA_CLUSTER_ID:?set KAFKA_CLUSTER_ID (the same on every node of the cluster)}"
config=/tmp/server.properties
printf '%s\n' "$KAFKA_PROPERTIES" > "$config"
java -Xmx256m -cp '/opt/kafka/libs/*' -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties \
    kafka.tools.StorageTool format --config "$config" --cluster-id "$KAFKA_CLUSTER_ID" --ignore-formatted
exec java ${KAFKA_HEAP_OPTS:--Xmx512m} -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties -cp '/opt/kafka/libs/*' kafka.Kafka "$config"
