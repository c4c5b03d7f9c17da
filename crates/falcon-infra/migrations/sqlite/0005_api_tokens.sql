-- Version 5: bearer tokens of `falcon serve`'s Web API. A token is shown once, when created; only its SHA-256
-- (hex) is kept, so the store never holds a usable credential. scope: read < write < admin. A revoked token keeps
-- its row (revoked_ms set) so its name stays reserved and the audit shows when it stopped working.
CREATE TABLE api_tokens (
    name        TEXT    PRIMARY KEY,
    scope       TEXT    NOT NULL,
    token_hash  TEXT    NOT NULL UNIQUE,
    created_ms  INTEGER NOT NULL,
    revoked_ms  INTEGER
);
