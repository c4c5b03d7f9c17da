-- Version 9: a machine's measured peaks, per pool (see the SQLite migration of the same number).
CREATE TABLE calibrations (
    pool             VARCHAR(255) PRIMARY KEY,
    host             VARCHAR(255) NOT NULL,
    cores            BIGINT NOT NULL,
    matmul_tflops    DOUBLE NOT NULL,
    memory_gb_per_s  DOUBLE NOT NULL,
    measured_ms      BIGINT NOT NULL,
    details          MEDIUMTEXT NOT NULL,
    INDEX calibrations_by_host (host, measured_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
