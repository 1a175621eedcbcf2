-- The job of the SQL crash test (sqlrun_test.go): the JSON rows of
-- `weir gen` from a Kafka topic, counted per key in tumbling ten-second
-- event-time windows (about ten rows each) into an Iceberg table. The
-- aggregates do not depend on the order of rows, so the table is the
-- same in every run. {{.Brokers}}, {{.Topic}} and {{.Warehouse}} are
-- filled in by the test.
SET 'pipeline.name' = 'sql-crash';
SET 'execution.checkpointing.interval' = '50 ms';

CREATE TABLE events (
    id       BIGINT,
    `key`    BIGINT,
    category STRING,
    price    DOUBLE,
    ts       TIMESTAMP(3),
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
    'connector' = 'kafka',
    'topic' = '{{.Topic}}',
    'properties.bootstrap.servers' = '{{.Brokers}}',
    'scan.startup.mode' = 'earliest-offset',
    'scan.bounded.mode' = 'latest-offset',
    'format' = 'json'
);

CREATE TABLE stats (
    `key`        BIGINT,
    window_start TIMESTAMP(3),
    window_end   TIMESTAMP(3),
    n            BIGINT,
    min_price    DOUBLE,
    max_price    DOUBLE,
    over_50      BIGINT
) WITH (
    'connector' = 'iceberg',
    'warehouse' = '{{.Warehouse}}',
    'catalog-database' = 'db',
    'catalog-table' = 'stats',
    'write.target-file-size-bytes' = '65536'
);

INSERT INTO stats
SELECT `key`, window_start, window_end,
       COUNT(*), MIN(price), MAX(price), COUNT(*) FILTER (WHERE price > 50)
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY `key`, window_start, window_end;
