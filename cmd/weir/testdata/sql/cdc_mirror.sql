-- The job of the CDC crash test (cdccrash_test.go): Debezium change
-- events of the accounts table (internal/cdcgen) from a Kafka topic,
-- mirrored into an Iceberg upsert table and an upsert-kafka topic. Both
-- must equal the source table after every run, however often the job
-- was killed. The totals per owner, an aggregation over the changes,
-- check that no change was lost or applied twice: the mirrors hold only
-- each id's last change, while a sum over the changes goes wrong when
-- an update is lost (the next update retracts a row never added) or
-- repeated. {{.Brokers}}, {{.Warehouse}} and {{.Out}} are filled in by
-- the test.
SET 'pipeline.name' = 'cdc-crash';
SET 'execution.checkpointing.interval' = '50 ms';

CREATE TABLE accounts (
    id      BIGINT,
    owner   STRING,
    balance BIGINT,
    PRIMARY KEY (id) NOT ENFORCED
) WITH (
    'connector' = 'kafka',
    'topic' = 'accounts',
    'properties.bootstrap.servers' = '{{.Brokers}}',
    'scan.startup.mode' = 'earliest-offset',
    'scan.bounded.mode' = 'latest-offset',
    'format' = 'debezium-json'
);

CREATE TABLE mirror (
    id      BIGINT,
    owner   STRING,
    balance BIGINT,
    PRIMARY KEY (id) NOT ENFORCED
) WITH (
    'connector' = 'iceberg',
    'warehouse' = '{{.Warehouse}}',
    'catalog-database' = 'db',
    'catalog-table' = 'mirror',
    'format-version' = '2',
    'write.upsert.enabled' = 'true',
    -- the job compacts the table itself, so kills land during
    -- compactions too
    'flink-maintenance.rewrite.enabled' = 'true',
    'flink-maintenance.rewrite.schedule.commit-count' = '2',
    'flink-maintenance.rewrite.min-input-files' = '2'
);

CREATE TABLE latest (
    id      BIGINT,
    owner   STRING,
    balance BIGINT,
    PRIMARY KEY (id) NOT ENFORCED
) WITH (
    'connector' = 'upsert-kafka',
    'topic' = '{{.Out}}',
    'properties.bootstrap.servers' = '{{.Brokers}}',
    'key.format' = 'json',
    'value.format' = 'json',
    'sink.transactional-id-prefix' = '{{.Out}}'
);

CREATE TABLE totals (
    owner   STRING,
    balance BIGINT,
    n       BIGINT,
    PRIMARY KEY (owner) NOT ENFORCED
) WITH (
    'connector' = 'upsert-kafka',
    'topic' = '{{.Out}}-totals',
    'properties.bootstrap.servers' = '{{.Brokers}}',
    'key.format' = 'json',
    'value.format' = 'json',
    'sink.transactional-id-prefix' = '{{.Out}}-totals'
);

INSERT INTO mirror SELECT * FROM accounts;

INSERT INTO totals SELECT owner, SUM(balance), COUNT(*) FROM accounts GROUP BY owner;

INSERT INTO latest SELECT * FROM accounts;
