-- Gold: revenue per customer, guarded by a rule that must hold. If a negative
-- total ever reached gold, the update would fail with [EXPECTATION_VIOLATION]
-- and the record, and nothing would be written.
CREATE OR REFRESH MATERIALIZED VIEW revenue_by_customer (
  CONSTRAINT revenue_not_negative EXPECT (revenue >= 0) ON VIOLATION FAIL UPDATE
)
COMMENT 'Revenue per customer'
AS SELECT customer, sum(amount) AS revenue, count(*) AS orders
FROM LIVE.orders_silver
GROUP BY customer;
