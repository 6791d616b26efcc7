-- Silver: orders that pass the data-quality rules (Databricks SQL, unchanged).
--   recent       warns: old orders are kept, and counted.
--   valid_id     drops: those orders go to orders_silver_quarantine.
--   valid_amount drops: an order without an amount fails it too (NULL is a violation).
CREATE OR REFRESH MATERIALIZED VIEW orders_silver (
  CONSTRAINT recent EXPECT (order_date >= '2020-01-01'),
  CONSTRAINT valid_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT valid_amount EXPECT (amount >= 0) ON VIOLATION DROP ROW
)
COMMENT 'Orders with an id and a non-negative amount'
AS SELECT * FROM LIVE.orders_bronze;

-- The same rules on a streaming table: its metrics count every record since the
-- last full refresh.
CREATE OR REFRESH STREAMING TABLE orders_stream_silver (
  CONSTRAINT valid_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT valid_amount EXPECT (amount >= 0) ON VIOLATION DROP ROW
)
AS SELECT * FROM STREAM(LIVE.orders_feed);
