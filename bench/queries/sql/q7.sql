-- Highest bid: the bids at their 10 s window's highest price, as the
-- suite writes it (an interval join of the bids with the windows' maxima).
CREATE TABLE nexmark_q7 (auction BIGINT, price BIGINT, bidder BIGINT, dateTime TIMESTAMP(3), extra VARCHAR)
WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q7
SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
FROM bid B
JOIN (
    SELECT MAX(price) AS maxprice, window_end AS dateTime
    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
    GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime;
