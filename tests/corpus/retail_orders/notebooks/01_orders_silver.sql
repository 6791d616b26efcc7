-- Databricks notebook source
-- MAGIC %md
-- MAGIC # Orders: silver
-- MAGIC Orders and order lines that pass the rules. Orders without a customer must
-- MAGIC never reach silver: the update fails.

-- COMMAND ----------

CREATE OR REFRESH STREAMING TABLE orders_silver (
  CONSTRAINT `valid order id` EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT `known channel` EXPECT (channel IN ('web', 'store', 'app')),
  CONSTRAINT `order has customer` EXPECT (customer_id IS NOT NULL) ON VIOLATION FAIL UPDATE
)
COMMENT "Orders with an id; unknown channels are kept and counted"
TBLPROPERTIES ('quality' = 'silver', 'sdp_expect.quarantine' = 'true')
AS SELECT order_id, customer_id, channel, order_date
FROM STREAM(LIVE.orders_landing)

-- COMMAND ----------

CREATE OR REFRESH STREAMING TABLE order_items_silver (
  CONSTRAINT `positive quantity` EXPECT (quantity > 0) ON VIOLATION DROP ROW,
  CONSTRAINT `price present` EXPECT (unit_price IS NOT NULL) ON VIOLATION DROP ROW
)
COMMENT "Order lines with a quantity and a price"
TBLPROPERTIES ('sdp_expect.quarantine' = 'true')
AS SELECT order_id, sku, quantity, unit_price, quantity * unit_price AS line_total
FROM STREAM(LIVE.order_items_landing)

-- COMMAND ----------

-- MAGIC %md
-- MAGIC Customers come as a full JSON export: a materialized view over the files.

-- COMMAND ----------

CREATE OR REFRESH MATERIALIZED VIEW customers (
  CONSTRAINT `email present` EXPECT (email IS NOT NULL)
)
COMMENT "Customer master data"
AS SELECT customer_id, name, email, country
FROM json.`${corpus.landing}/customers`
