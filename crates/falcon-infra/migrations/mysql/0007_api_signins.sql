-- Version 7: dashboard sign-in sessions of `falcon serve` (see the SQLite migration of the same number): the
-- SHA-256 of an opaque session id, the token it speaks for, when it was made, expires and was ended.
CREATE TABLE api_signins (
    id_hash     VARCHAR(255) PRIMARY KEY,
    token_name  VARCHAR(255) NOT NULL,
    created_ms  BIGINT NOT NULL,
    expires_ms  BIGINT NOT NULL,
    ended_ms    BIGINT NULL,
    INDEX api_signins_token (token_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
