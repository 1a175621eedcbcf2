-- Processing-time windows.
CREATE TABLE nexmark_q12 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3))
WITH ('connector' = 'blackhole');
CREATE VIEW B AS SELECT *, PROCTIME() AS p_time FROM bid;
INSERT INTO nexmark_q12
SELECT B.bidder, count(*) AS bid_count, window_start, window_end
FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY B.bidder, window_start, window_end;
