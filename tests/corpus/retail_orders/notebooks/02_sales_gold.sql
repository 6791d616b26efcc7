-- Databricks notebook source
-- MAGIC %md
-- MAGIC # Sales: gold

-- COMMAND ----------

CREATE OR REFRESH MATERIALIZED VIEW order_totals (
  CONSTRAINT `total not negative` EXPECT (order_total >= 0) ON VIOLATION FAIL UPDATE
)
COMMENT "One row per order with its lines summed"
AS SELECT o.order_id,
          o.customer_id,
          o.channel,
          count(i.sku) AS items,
          coalesce(sum(i.line_total), 0) AS order_total
FROM LIVE.orders_silver o
LEFT JOIN LIVE.order_items_silver i ON o.order_id = i.order_id
GROUP BY o.order_id, o.customer_id, o.channel

-- COMMAND ----------

CREATE OR REFRESH LIVE TABLE sales_by_country
COMMENT "Revenue per country"
AS SELECT c.country, count(*) AS orders, sum(t.order_total) AS revenue
FROM LIVE.order_totals t
INNER JOIN LIVE.customers c ON t.customer_id = c.customer_id
GROUP BY c.country

-- COMMAND ----------

CREATE OR REFRESH MATERIALIZED VIEW customer_orders
COMMENT "Every customer and every customer id seen in orders, with the number of orders"
AS SELECT coalesce(c.customer_id, o.customer_id) AS customer_id,
          c.name,
          coalesce(o.orders, 0) AS orders
FROM LIVE.customers c
FULL OUTER JOIN (
  SELECT customer_id, count(*) AS orders FROM LIVE.orders_silver GROUP BY customer_id
) o ON c.customer_id = o.customer_id
