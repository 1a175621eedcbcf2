-- The job of the CDC crash test (cdccrash_test.go): Debezium change
-- events of the accounts table (internal/cdcgen) from a Kafka topic,
-- mirrored into an Iceberg upsert table and an upsert-kafka topic. Both
-- must equal the source table after every run, however often the job
-- was killed. {{.Brokers}}, {{.Warehouse}} and {{.Out}} are filled in by
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
    'write.upsert.enabled' = 'true'
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

INSERT INTO mirror SELECT * FROM accounts;

INSERT INTO latest SELECT * FROM accounts;
