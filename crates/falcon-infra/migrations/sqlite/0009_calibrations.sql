-- Version 9: a machine's measured peaks, per pool (`falcon doctor --calibrate`): what the XLA:CPU roofline, bound-by
-- and MFU divide by. One row per pool, replaced by each calibration.
-- host: the machine it ran on; cores: the cores the benchmark used; matmul_tflops: f32 matmul peak of all of them;
-- memory_gb_per_s: memory bandwidth of all of them (10^9 bytes a second); measured_ms: when; details: the method,
-- sizes and every repetition, as JSON.
CREATE TABLE calibrations (
    pool TEXT NOT NULL PRIMARY KEY,
    host TEXT NOT NULL,
    cores INTEGER NOT NULL,
    matmul_tflops REAL NOT NULL,
    memory_gb_per_s REAL NOT NULL,
    measured_ms INTEGER NOT NULL,
    details TEXT NOT NULL
);
CREATE INDEX calibrations_by_host ON calibrations (host, measured_ms);
