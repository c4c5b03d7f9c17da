-- Version 7: dashboard sign-in sessions of `falcon serve`. A browser that signs in with a token gets an opaque,
-- random session id in its cookie, never the token; only the id's SHA-256 (hex) is kept here. A session speaks for
-- its token while the token is live, until it expires or is ended by signing out (ended_ms set): revoking the
-- token ends every session made with it, since each lookup joins the token's row.
CREATE TABLE api_signins (
    id_hash     TEXT    PRIMARY KEY,
    token_name  TEXT    NOT NULL,
    created_ms  INTEGER NOT NULL,
    expires_ms  INTEGER NOT NULL,
    ended_ms    INTEGER
);
CREATE INDEX api_signins_token ON api_signins (token_name);
