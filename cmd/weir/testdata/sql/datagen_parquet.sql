-- The end-to-end script of sqlrun_test.go: generated rows (id 0..19999,
-- one every 10 ms of event time from 2026-03-01 12:00:00) counted per
-- id mod 7 in tumbling one-second windows, and a filtered, computed
-- projection of them, into two Parquet tables (the second partitioned).
-- {{.Out}} is filled in by the test.
SET 'parallelism.default' = '3';

CREATE TABLE gen (
    id BIGINT,
    ts TIMESTAMP(3),
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
    'connector' = 'datagen',
    'fields.id.kind' = 'sequence',
    'fields.id.start' = '0',
    'fields.id.end' = '19999',
    'fields.ts.start' = '2026-03-01 12:00:00',
    'fields.ts.interval' = '10 ms',
    'splits' = '4'
);

CREATE VIEW keyed AS
SELECT id, MOD(id, 7) AS k, CASE WHEN MOD(id, 4) = 0 THEN NULL ELSE id END AS maybe, ts
FROM gen;

CREATE TABLE windows (
    k BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
    n BIGINT, total BIGINT, lo BIGINT, hi BIGINT, evens BIGINT, counted BIGINT
) WITH (
    'connector' = 'filesystem',
    'path' = '{{.Out}}/windows',
    'format' = 'parquet'
);

CREATE TABLE picked (id BIGINT, v BIGINT, label STRING, bucket INT, ts TIMESTAMP(3))
PARTITIONED BY (bucket)
WITH (
    'connector' = 'filesystem',
    'path' = '{{.Out}}/picked',
    'format' = 'parquet'
);

INSERT INTO windows
SELECT k, window_start, window_end,
       COUNT(*), SUM(id), MIN(id), MAX(id), COUNT(*) FILTER (WHERE MOD(id, 2) = 0), COUNT(maybe)
FROM TABLE(TUMBLE(TABLE keyed, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY k, window_start, window_end;

INSERT INTO picked
SELECT id, id * 3 + 1, UPPER(CONCAT('row-', CAST(id AS STRING))), CAST(MOD(id, 3) AS INT), ts
FROM gen
WHERE MOD(id, 5) = 2 AND id < 10000;
