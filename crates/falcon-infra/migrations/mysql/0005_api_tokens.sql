-- Version 5: bearer tokens of `falcon serve`'s Web API (see the SQLite migration of the same number): the token's
-- SHA-256 only, its scope, when it was created and revoked.
CREATE TABLE api_tokens (
    name        VARCHAR(255) PRIMARY KEY,
    scope       VARCHAR(255) NOT NULL,
    token_hash  VARCHAR(255) NOT NULL UNIQUE,
    created_ms  BIGINT NOT NULL,
    revoked_ms  BIGINT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
