/*M!999999\- enable the sandbox mode */ 

/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET @OLD_CHARACTER_SET_RESULTS=@@CHARACTER_SET_RESULTS */;
/*!40101 SET @OLD_COLLATION_CONNECTION=@@COLLATION_CONNECTION */;
/*!40101 SET NAMES utf8mb4 */;
/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;
/*!40103 SET TIME_ZONE='+00:00' */;
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;
/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;
/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;
/*!40111 SET @OLD_SQL_NOTES=@@SQL_NOTES, SQL_NOTES=0 */;
DROP TABLE IF EXISTS `_sqlx_migrations`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `_sqlx_migrations` (
  `version` bigint(20) NOT NULL,
  `description` text NOT NULL,
  `installed_on` timestamp NOT NULL DEFAULT current_timestamp(),
  `success` tinyint(1) NOT NULL,
  `checksum` blob NOT NULL,
  `execution_time` bigint(20) NOT NULL,
  PRIMARY KEY (`version`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `_sqlx_migrations` WRITE;
/*!40000 ALTER TABLE `_sqlx_migrations` DISABLE KEYS */;
INSERT INTO `_sqlx_migrations` VALUES
(1,'initial schema','2026-12-02 00:54:36',1,0x5245C8C1F27D1AB8B3244CF13B2F2D98A93E963062FB602CE8999112E603A3C846C23D1A42F241B1ADF64780C64F88D7,87319827),
(2,'job control','2026-12-02 00:54:36',1,0x2B0287D452831228D741781AFC8190A5E9D9B63AFE78F93943DD76CB04CEC7C0A39E4DE928E3A6D5DAB1B594C7099B2C,5373341);
/*!40000 ALTER TABLE `_sqlx_migrations` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `analysis_summaries`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `analysis_summaries` (
  `experiment_id` bigint(20) NOT NULL,
  `tool` varchar(255) NOT NULL,
  `mfu` double DEFAULT NULL,
  `step_time_ms` double DEFAULT NULL,
  `duty_cycle` double DEFAULT NULL,
  `peak_memory_bytes` bigint(20) DEFAULT NULL,
  `bound_by` varchar(255) DEFAULT NULL,
  `details` mediumtext NOT NULL,
  `updated_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`experiment_id`,`tool`),
  CONSTRAINT `analysis_summaries_ibfk_1` FOREIGN KEY (`experiment_id`) REFERENCES `experiments` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `analysis_summaries` WRITE;
/*!40000 ALTER TABLE `analysis_summaries` DISABLE KEYS */;
INSERT INTO `analysis_summaries` VALUES
(1,'profile',NULL,127.18935099999999,NULL,NULL,NULL,'{\"device_cores\":0,\"device_type\":\"CPU\",\"flops_utilization\":0.0,\"hbm_bw_utilization\":0.0,\"hosts\":1,\"operational_intensity\":0.0,\"profile\":\"file:///srv/quickstart/.falcon-my/artifacts/experiments/e-1/plugins/profile/2026_12_02_00_54_44\"}',1796172886976),
(1,'trace',NULL,127.18935100000002,0.8438714797226485,NULL,'partly host','{\"exposed_collective_percent\":0.0,\"host_bound_fraction\":0.15523363010686853,\"idle_percent\":15.61285202773514,\"step_rule\":\"host_markers\",\"steps\":6}',1796172887161),
(2,'profile',NULL,279.9435046666666,NULL,NULL,NULL,'{\"device_cores\":0,\"device_type\":\"CPU\",\"flops_utilization\":0.0,\"hbm_bw_utilization\":0.0,\"hosts\":1,\"operational_intensity\":0.0,\"profile\":\"file:///srv/quickstart/.falcon-my/artifacts/experiments/e-2/plugins/profile/2026_12_02_00_54_56\"}',1796172902052),
(2,'trace',NULL,279.9435046666667,0.846241074422309,NULL,'partly host','{\"exposed_collective_percent\":0.0,\"host_bound_fraction\":0.15319154621714542,\"idle_percent\":15.375892557769102,\"step_rule\":\"host_markers\",\"steps\":6}',1796172902270);
/*!40000 ALTER TABLE `analysis_summaries` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `artifacts`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `artifacts` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `experiment_id` bigint(20) DEFAULT NULL,
  `job_id` bigint(20) DEFAULT NULL,
  `kind` varchar(255) NOT NULL,
  `object_key` varchar(1024) NOT NULL,
  `uri` varchar(768) NOT NULL,
  `size_bytes` bigint(20) NOT NULL,
  `sha256` varchar(255) NOT NULL,
  `content_type` varchar(255) NOT NULL,
  `created_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `uri` (`uri`),
  KEY `artifacts_by_experiment` (`experiment_id`,`kind`,`id`),
  KEY `artifacts_by_job` (`job_id`,`id`),
  CONSTRAINT `artifacts_ibfk_1` FOREIGN KEY (`experiment_id`) REFERENCES `experiments` (`id`),
  CONSTRAINT `artifacts_ibfk_2` FOREIGN KEY (`job_id`) REFERENCES `jobs` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=13 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `artifacts` WRITE;
/*!40000 ALTER TABLE `artifacts` DISABLE KEYS */;
INSERT INTO `artifacts` VALUES
(1,1,1,'config','experiments/e-1/config_effective.json','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-1/config_effective.json',935,'5d65aca1f5b7e39625fee88ddb44409c40c287dbb5a5d675055a57fb9b8874b5','application/json',1796172886705),
(2,1,1,'logs','experiments/e-1/logs/1/stderr.log','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-1/logs/1/stderr.log',292,'9d2d889e3860f12d07befce97f1c0e1372bcd494eefb94664634ecf7e46df4e9','text/plain; charset=utf-8',1796172886708),
(3,1,1,'logs','experiments/e-1/logs/1/stdout.log','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-1/logs/1/stdout.log',0,'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855','text/plain; charset=utf-8',1796172886710),
(4,1,1,'metrics','experiments/e-1/metrics.jsonl','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-1/metrics.jsonl',5452,'1f283c097e4b54c067000fcb5cf894c561da38dfd61601cdce04c880729d0aac','application/x-ndjson',1796172886715),
(5,1,1,'trace','experiments/e-1/plugins/profile/2026_12_02_00_54_44/vm.trace.json.gz','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-1/plugins/profile/2026_12_02_00_54_44/vm.trace.json.gz',300398,'35e7a482793041afb757c7356dc8a46af42ad48f37a9fc0e8782f5e6942ffd42','application/gzip',1796172886726),
(6,1,1,'xprof','experiments/e-1/plugins/profile/2026_12_02_00_54_44/vm.xplane.pb','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-1/plugins/profile/2026_12_02_00_54_44/vm.xplane.pb',2314626,'0d83c2db6a4c237868fa5df4c1ac8a1808875ed27563741fd4536aded2191085','application/x-protobuf',1796172886814),
(7,2,2,'config','experiments/e-2/config_effective.json','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-2/config_effective.json',938,'2a160b7ca6479f38ea3700991554af01e36aacb25e5ab99b68a9f85c6b41ccb7','application/json',1796172901741),
(8,2,2,'logs','experiments/e-2/logs/1/stderr.log','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-2/logs/1/stderr.log',293,'6ec853a70dda372119dfe977306578bdb628ce69bd9697810faa26f65eccb0fa','text/plain; charset=utf-8',1796172901745),
(9,2,2,'logs','experiments/e-2/logs/1/stdout.log','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-2/logs/1/stdout.log',0,'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855','text/plain; charset=utf-8',1796172901747),
(10,2,2,'metrics','experiments/e-2/metrics.jsonl','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-2/metrics.jsonl',5477,'56d82021db66362901d0c9953799abf64c37a3a5ddc01f1ecb60e5aabc3ff165','application/x-ndjson',1796172901750),
(11,2,2,'trace','experiments/e-2/plugins/profile/2026_12_02_00_54_56/vm.trace.json.gz','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-2/plugins/profile/2026_12_02_00_54_56/vm.trace.json.gz',332702,'a077be513a7ed62ab544e65c10cab693005352fabca021af5307b084d98934a8','application/gzip',1796172901764),
(12,2,2,'xprof','experiments/e-2/plugins/profile/2026_12_02_00_54_56/vm.xplane.pb','file:///srv/quickstart/.falcon-my/artifacts/experiments/e-2/plugins/profile/2026_12_02_00_54_56/vm.xplane.pb',2430687,'2d640ba063c58d131966c1c493d9a6474104264dc78ce515b06113cb4ca8e4ab','application/x-protobuf',1796172901858);
/*!40000 ALTER TABLE `artifacts` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `experiment_labels`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `experiment_labels` (
  `experiment_id` bigint(20) NOT NULL,
  `label_key` varchar(255) NOT NULL,
  `label_value` varchar(255) NOT NULL,
  PRIMARY KEY (`experiment_id`,`label_key`),
  KEY `experiment_labels_by_pair` (`label_key`,`label_value`,`experiment_id`),
  CONSTRAINT `experiment_labels_ibfk_1` FOREIGN KEY (`experiment_id`) REFERENCES `experiments` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `experiment_labels` WRITE;
/*!40000 ALTER TABLE `experiment_labels` DISABLE KEYS */;
INSERT INTO `experiment_labels` VALUES
(1,'example','jax_transformer'),
(2,'example','jax_transformer'),
(1,'role','baseline'),
(2,'role','variant');
/*!40000 ALTER TABLE `experiment_labels` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `experiment_transitions`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `experiment_transitions` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `experiment_id` bigint(20) NOT NULL,
  `from_status` varchar(255) DEFAULT NULL,
  `to_status` varchar(255) NOT NULL,
  `at_ms` bigint(20) NOT NULL,
  `reason` mediumtext NOT NULL,
  `attempt` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `experiment_transitions_by_experiment` (`experiment_id`,`id`),
  CONSTRAINT `experiment_transitions_ibfk_1` FOREIGN KEY (`experiment_id`) REFERENCES `experiments` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=9 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `experiment_transitions` WRITE;
/*!40000 ALTER TABLE `experiment_transitions` DISABLE KEYS */;
INSERT INTO `experiment_transitions` VALUES
(1,1,NULL,'PENDING',1796172876815,'recorded',1),
(2,1,'PENDING','PROVISIONING',1796172876846,'job j-1 queued',1),
(3,1,'PROVISIONING','RUNNING',1796172877396,'running on pool local',1),
(4,1,'RUNNING','COMPLETED',1796172886696,'job succeeded',1),
(5,2,NULL,'PENDING',1796172887195,'recorded',1),
(6,2,'PENDING','PROVISIONING',1796172887203,'job j-2 queued',1),
(7,2,'PROVISIONING','RUNNING',1796172887745,'running on pool local',1),
(8,2,'RUNNING','COMPLETED',1796172901732,'job succeeded',1);
/*!40000 ALTER TABLE `experiment_transitions` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `experiments`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `experiments` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `name` varchar(255) NOT NULL,
  `scenario` varchar(255) NOT NULL,
  `status` varchar(255) NOT NULL,
  `goal_id` bigint(20) DEFAULT NULL,
  `session_id` bigint(20) DEFAULT NULL,
  `baseline_id` bigint(20) DEFAULT NULL,
  `job_id` bigint(20) DEFAULT NULL,
  `attempt` bigint(20) NOT NULL DEFAULT 1,
  `spec` mediumtext NOT NULL,
  `config_hash` varchar(255) NOT NULL,
  `labels` mediumtext NOT NULL,
  `created_ms` bigint(20) NOT NULL,
  `updated_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `baseline_id` (`baseline_id`),
  KEY `job_id` (`job_id`),
  KEY `experiments_by_status` (`status`,`id`),
  KEY `experiments_by_goal_status` (`goal_id`,`status`,`id`),
  KEY `experiments_by_session` (`session_id`,`id`),
  KEY `experiments_by_config_hash` (`config_hash`,`id`),
  KEY `experiments_by_name` (`name`,`id`),
  KEY `experiments_by_created` (`created_ms`,`id`),
  CONSTRAINT `experiments_ibfk_1` FOREIGN KEY (`goal_id`) REFERENCES `goals` (`id`),
  CONSTRAINT `experiments_ibfk_2` FOREIGN KEY (`session_id`) REFERENCES `sessions` (`id`),
  CONSTRAINT `experiments_ibfk_3` FOREIGN KEY (`baseline_id`) REFERENCES `experiments` (`id`),
  CONSTRAINT `experiments_ibfk_4` FOREIGN KEY (`job_id`) REFERENCES `jobs` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `experiments` WRITE;
/*!40000 ALTER TABLE `experiments` DISABLE KEYS */;
INSERT INTO `experiments` VALUES
(1,'jax-transformer-l4-d128-bs8','benchmark','COMPLETED',NULL,NULL,NULL,1,1,'{\"config\":{\"batch_size\":8,\"d_model\":128,\"heads\":4,\"layers\":4,\"learning_rate\":0.003,\"model\":\"jax-transformer-tiny\",\"parallelism\":{\"dp\":1,\"ep\":1,\"fsdp\":1,\"pp\":1,\"sp\":1,\"tp\":1},\"precision\":\"fp32\",\"remat\":\"none\",\"seed\":0,\"seq_len\":128,\"steps\":30},\"labels\":{\"example\":\"jax_transformer\",\"role\":\"baseline\"},\"name\":\"jax-transformer-l4-d128-bs8\",\"priority\":0,\"profile\":{\"enabled\":true,\"num_steps\":6,\"start_step\":10},\"resources\":{\"accelerator\":\"cpu\",\"capacity\":\"on_demand\",\"devices\":1,\"slices\":1},\"retries\":2,\"scenario\":\"benchmark\",\"timeout\":\"10m\",\"workload\":{\"command\":[\".cache/example-venv/bin/python\",\"examples/jax_transformer/train.py\"],\"framework\":\"jax\"}}','b6652a4f9343a9b893decceaff4bc5a6667fd2beafe9954c906fb2dac838b105','{\"example\":\"jax_transformer\",\"role\":\"baseline\"}',1796172876815,1796172886696),
(2,'jax-transformer-l4-d128-bs16','benchmark','COMPLETED',NULL,NULL,NULL,2,1,'{\"config\":{\"batch_size\":16,\"d_model\":128,\"heads\":4,\"layers\":4,\"learning_rate\":0.003,\"model\":\"jax-transformer-tiny\",\"parallelism\":{\"dp\":1,\"ep\":1,\"fsdp\":1,\"pp\":1,\"sp\":1,\"tp\":1},\"precision\":\"fp32\",\"remat\":\"none\",\"seed\":0,\"seq_len\":128,\"steps\":30},\"labels\":{\"example\":\"jax_transformer\",\"role\":\"variant\"},\"name\":\"jax-transformer-l4-d128-bs16\",\"priority\":0,\"profile\":{\"enabled\":true,\"num_steps\":6,\"start_step\":10},\"resources\":{\"accelerator\":\"cpu\",\"capacity\":\"on_demand\",\"devices\":1,\"slices\":1},\"retries\":2,\"scenario\":\"benchmark\",\"timeout\":\"10m\",\"workload\":{\"command\":[\".cache/example-venv/bin/python\",\"examples/jax_transformer/train.py\"],\"framework\":\"jax\"}}','b49bcf239528f91c1fcb4ecc7fcd3e04ab78f4b2d8739089195ad90ae887c096','{\"example\":\"jax_transformer\",\"role\":\"variant\"}',1796172887195,1796172901732);
/*!40000 ALTER TABLE `experiments` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `goal_transitions`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `goal_transitions` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `goal_id` bigint(20) NOT NULL,
  `from_status` varchar(255) DEFAULT NULL,
  `to_status` varchar(255) NOT NULL,
  `at_ms` bigint(20) NOT NULL,
  `reason` mediumtext NOT NULL,
  `actor` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `goal_transitions_by_goal` (`goal_id`,`id`),
  CONSTRAINT `goal_transitions_ibfk_1` FOREIGN KEY (`goal_id`) REFERENCES `goals` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `goal_transitions` WRITE;
/*!40000 ALTER TABLE `goal_transitions` DISABLE KEYS */;
/*!40000 ALTER TABLE `goal_transitions` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `goals`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `goals` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `title` varchar(1024) NOT NULL,
  `workload` varchar(255) DEFAULT NULL,
  `hardware` varchar(255) DEFAULT NULL,
  `metric` varchar(255) NOT NULL,
  `direction` varchar(255) NOT NULL,
  `target` double DEFAULT NULL,
  `baseline_experiment_id` bigint(20) DEFAULT NULL,
  `priority` bigint(20) NOT NULL DEFAULT 0,
  `status` varchar(255) NOT NULL,
  `owner` varchar(255) DEFAULT NULL,
  `lease_expires_ms` bigint(20) DEFAULT NULL,
  `created_ms` bigint(20) NOT NULL,
  `updated_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `goals_by_status_priority` (`status`,`priority`,`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `goals` WRITE;
/*!40000 ALTER TABLE `goals` DISABLE KEYS */;
/*!40000 ALTER TABLE `goals` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `job_transitions`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `job_transitions` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `job_id` bigint(20) NOT NULL,
  `from_status` varchar(255) DEFAULT NULL,
  `to_status` varchar(255) NOT NULL,
  `at_ms` bigint(20) NOT NULL,
  `reason` mediumtext NOT NULL,
  `exit_code` bigint(20) DEFAULT NULL,
  `attempt` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `job_transitions_by_job` (`job_id`,`id`),
  CONSTRAINT `job_transitions_ibfk_1` FOREIGN KEY (`job_id`) REFERENCES `jobs` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=9 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `job_transitions` WRITE;
/*!40000 ALTER TABLE `job_transitions` DISABLE KEYS */;
INSERT INTO `job_transitions` VALUES
(1,1,NULL,'QUEUED',1796172876819,'queued',NULL,1),
(2,1,'QUEUED','SUBMITTED',1796172876856,'placed on pool local: local has 2 of 2 chips free in zone local',NULL,1),
(3,1,'SUBMITTED','RUNNING',1796172877379,'running on pool local',NULL,1),
(4,1,'RUNNING','SUCCEEDED',1796172886691,'exited with status 0',0,1),
(5,2,NULL,'QUEUED',1796172887199,'queued',NULL,1),
(6,2,'QUEUED','SUBMITTED',1796172887217,'placed on pool local: local has 2 of 2 chips free in zone local',NULL,1),
(7,2,'SUBMITTED','RUNNING',1796172887728,'running on pool local',NULL,1),
(8,2,'RUNNING','SUCCEEDED',1796172901727,'exited with status 0',0,1);
/*!40000 ALTER TABLE `job_transitions` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `jobs`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `jobs` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `name` varchar(255) NOT NULL,
  `spec` mediumtext NOT NULL,
  `status` varchar(255) NOT NULL,
  `status_reason` mediumtext DEFAULT NULL,
  `exit_code` bigint(20) DEFAULT NULL,
  `attempt` bigint(20) NOT NULL DEFAULT 1,
  `priority` bigint(20) NOT NULL DEFAULT 0,
  `pool` varchar(255) DEFAULT NULL,
  `backend_ref` varchar(255) DEFAULT NULL,
  `labels` mediumtext NOT NULL,
  `lease_owner` varchar(255) DEFAULT NULL,
  `lease_expires_ms` bigint(20) DEFAULT NULL,
  `created_ms` bigint(20) NOT NULL,
  `updated_ms` bigint(20) NOT NULL,
  `cancel_requested` bigint(20) NOT NULL DEFAULT 0,
  `excluded_pools` mediumtext NOT NULL DEFAULT '[]',
  `started_ms` bigint(20) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `name` (`name`),
  KEY `jobs_by_status_priority` (`status`,`priority`,`id`),
  KEY `jobs_by_lease` (`lease_expires_ms`)
) ENGINE=InnoDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `jobs` WRITE;
/*!40000 ALTER TABLE `jobs` DISABLE KEYS */;
INSERT INTO `jobs` VALUES
(1,'e-1','{\"artifact_uri\":\"file:///srv/quickstart/.falcon-my/artifacts/experiments/e-1\",\"capacity\":\"on_demand\",\"command\":[\".cache/example-venv/bin/python\",\"examples/jax_transformer/train.py\"],\"env\":{\"FALCON_EXP_CONFIG\":\".falcon-my/experiments/e-1/config.json\",\"FALCON_EXP_ID\":\"e-1\",\"FALCON_PROFILE_NUM_STEPS\":\"6\",\"FALCON_PROFILE_START_STEP\":\"10\"},\"labels\":{\"example\":\"jax_transformer\",\"falcon.dev/experiment\":\"e-1\",\"role\":\"baseline\"},\"name\":\"e-1\",\"priority\":0,\"resources\":{\"accelerator\":\"cpu\",\"devices\":1,\"slices\":1},\"retry\":{\"max_attempts\":3},\"timeout_s\":600}','SUCCEEDED','exited with status 0',0,1,0,'local','e-1-a1-local','{\"example\":\"jax_transformer\",\"falcon.dev/experiment\":\"e-1\",\"role\":\"baseline\"}',NULL,NULL,1796172876819,1796172886691,0,'[]',1796172877379),
(2,'e-2','{\"artifact_uri\":\"file:///srv/quickstart/.falcon-my/artifacts/experiments/e-2\",\"capacity\":\"on_demand\",\"command\":[\".cache/example-venv/bin/python\",\"examples/jax_transformer/train.py\"],\"env\":{\"FALCON_EXP_CONFIG\":\".falcon-my/experiments/e-2/config.json\",\"FALCON_EXP_ID\":\"e-2\",\"FALCON_PROFILE_NUM_STEPS\":\"6\",\"FALCON_PROFILE_START_STEP\":\"10\"},\"labels\":{\"example\":\"jax_transformer\",\"falcon.dev/experiment\":\"e-2\",\"role\":\"variant\"},\"name\":\"e-2\",\"priority\":0,\"resources\":{\"accelerator\":\"cpu\",\"devices\":1,\"slices\":1},\"retry\":{\"max_attempts\":3},\"timeout_s\":600}','SUCCEEDED','exited with status 0',0,1,0,'local','e-2-a1-local','{\"example\":\"jax_transformer\",\"falcon.dev/experiment\":\"e-2\",\"role\":\"variant\"}',NULL,NULL,1796172887199,1796172901727,0,'[]',1796172887728);
/*!40000 ALTER TABLE `jobs` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `metric_summaries`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `metric_summaries` (
  `experiment_id` bigint(20) NOT NULL,
  `metric` varchar(255) NOT NULL,
  `count` bigint(20) NOT NULL,
  `mean` double NOT NULL,
  `median` double NOT NULL,
  `p90` double NOT NULL,
  `min_value` double NOT NULL,
  `max_value` double NOT NULL,
  `last_value` double NOT NULL,
  `updated_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`experiment_id`,`metric`),
  CONSTRAINT `metric_summaries_ibfk_1` FOREIGN KEY (`experiment_id`) REFERENCES `experiments` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `metric_summaries` WRITE;
/*!40000 ALTER TABLE `metric_summaries` DISABLE KEYS */;
INSERT INTO `metric_summaries` VALUES
(1,'loss',27,5.428381213435422,5.509775161743164,5.625647735595703,4.654105186462402,5.706393241882324,4.654105186462402,1796172886820),
(1,'model_flops',27,6074873856,6074873856,6074873856,6074873856,6074873856,6074873856,1796172886820),
(1,'step_time_s',27,0.1227079692592699,0.12200328200003696,0.13245655519997399,0.11038007800004834,0.1423475699999699,0.12387931900002513,1796172886820),
(1,'tflops_per_device',27,0.049711733775754795,0.04979270849449902,0.053551370529666145,0.042676343937597845,0.05503596270331807,0.049038644263121656,1796172886820),
(1,'tokens_per_s',27,8379.56747630167,8393.216831656133,9026.788822654711,7193.659856646774,9277.036386942502,8266.109373751015,1796172886820),
(2,'loss',27,5.0146959092881955,5.353471755981445,5.592200851440429,3.7006282806396484,5.651792526245117,3.7006282806396484,1796172901862),
(2,'model_flops',27,12138306560,12138306560,12138306560,12138306560,12138306560,12138306560,1796172901862),
(2,'step_time_s',27,0.28301990192592175,0.2836506690000533,0.29683847220001097,0.25683428799993635,0.316940364000061,0.29160831800004416,1796172901862),
(2,'tflops_per_device',27,0.04298495751797279,0.042793153292360886,0.0451025712667194,0.03829839281688231,0.04726123857731569,0.04162537832682181,1796172901862),
(2,'tokens_per_s',27,7252.510270823829,7220.148668147915,7609.798409494226,6461.783453998954,7974.013189393573,7023.119278784393,1796172901862);
/*!40000 ALTER TABLE `metric_summaries` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `sessions`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `sessions` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `goal_id` bigint(20) DEFAULT NULL,
  `name` varchar(255) NOT NULL,
  `spec` mediumtext NOT NULL,
  `created_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `sessions_by_goal` (`goal_id`,`id`),
  CONSTRAINT `sessions_ibfk_1` FOREIGN KEY (`goal_id`) REFERENCES `goals` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `sessions` WRITE;
/*!40000 ALTER TABLE `sessions` DISABLE KEYS */;
/*!40000 ALTER TABLE `sessions` ENABLE KEYS */;
UNLOCK TABLES;
/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;

/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;
/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;
/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */;
/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;
/*!40101 SET CHARACTER_SET_RESULTS=@OLD_CHARACTER_SET_RESULTS */;
/*!40101 SET COLLATION_CONNECTION=@OLD_COLLATION_CONNECTION */;
/*!40111 SET SQL_NOTES=@OLD_SQL_NOTES */;

