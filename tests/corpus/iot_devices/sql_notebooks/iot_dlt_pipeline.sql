-- Databricks notebook source
-- MAGIC %md
-- MAGIC ## IoT readings pipeline
-- MAGIC * `readings_clean`: readings with a device and a plausible temperature
-- MAGIC * `device_daily`: one row per device and day
-- MAGIC * `site_alerts`, `hot_readings`: readings above 50 °C

-- COMMAND ----------

CREATE STREAMING LIVE TABLE readings_clean (
  CONSTRAINT `device id present` EXPECT (device_id IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT `temperature in range` EXPECT (temperature_c BETWEEN -40 AND 85) ON VIOLATION DROP ROW,
  CONSTRAINT `battery reported` EXPECT (battery_pct IS NOT NULL)
)
COMMENT "Readings with a device id and a temperature the sensor can measure"
TBLPROPERTIES ('sdp_expect.quarantine' = 'true')
AS SELECT * FROM STREAM(LIVE.device_readings_landing)

-- COMMAND ----------

CREATE TEMPORARY LIVE VIEW devices
COMMENT "Device register export"
AS SELECT device_id, site, model FROM json.`${corpus.landing}/devices`

-- COMMAND ----------

CREATE LIVE TABLE device_daily (
  CONSTRAINT `known site` EXPECT (site IS NOT NULL),
  CONSTRAINT `battery healthy` EXPECT (min_battery >= 20) ON VIOLATION DROP ROW
)
COMMENT "Readings per device and day"
TBLPROPERTIES ('sdp_expect.quarantine' = 'true')
AS SELECT r.device_id,
          d.site,
          r.reading_date,
          count(*) AS readings,
          min(r.temperature_c) AS min_temperature_c,
          max(r.temperature_c) AS max_temperature_c,
          min(r.battery_pct) AS min_battery
FROM LIVE.readings_clean r
LEFT JOIN LIVE.devices d ON r.device_id = d.device_id
GROUP BY r.device_id, d.site, r.reading_date

-- COMMAND ----------

CREATE INCREMENTAL LIVE TABLE hot_readings
COMMENT "Every reading above 50 °C, as it arrives"
AS SELECT device_id, reading_ts, temperature_c
FROM STREAM(LIVE.readings_clean)
WHERE temperature_c > 50

-- COMMAND ----------

CREATE LIVE TABLE site_alerts
AS SELECT d.site, count(*) AS hot_readings, max(r.temperature_c) AS max_temperature_c
FROM LIVE.readings_clean r
JOIN LIVE.devices d ON r.device_id = d.device_id
WHERE r.temperature_c > 50
GROUP BY d.site
