//! Error kinds shared by every layer, and the exit code each maps to (docs/DESIGN.md §6).

use serde::Serialize;

/// The kind of a failure, as the interface reports it: a stable code in JSON and an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Anything that went wrong while doing the work: a dead backend, a corrupt file. Exit 1.
    Failure,
    /// The command line or a spec was malformed. Exit 2.
    Usage,
    /// A file, experiment, profile or object that does not exist. Exit 3.
    NotFound,
    /// The request conflicts with the current state (already exists, invalid transition). Exit 4.
    Conflict,
    /// A comparison found a regression and the caller asked to fail on it. Exit 5.
    Regression,
    /// Input that was read but does not validate (a spec with a wrong field, a bad name). Exit 1, as any
    /// failure of the work; the Web API answers it with 422.
    Invalid,
    /// The server runs as many heavy analyses as it allows: try again shortly (the Web API's 429 with
    /// `Retry-After`). Exit 1.
    TooManyRequests,
}

impl ErrorKind {
    /// The process exit status for this kind.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Failure => 1,
            ErrorKind::Usage => 2,
            ErrorKind::NotFound => 3,
            ErrorKind::Conflict => 4,
            ErrorKind::Regression => 5,
            ErrorKind::Invalid => 1,
            ErrorKind::TooManyRequests => 1,
        }
    }

    /// The stable string code used in the JSON error envelope.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Failure => "failure",
            ErrorKind::Usage => "usage",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Regression => "regression",
            ErrorKind::Invalid => "invalid",
            ErrorKind::TooManyRequests => "too_many_requests",
        }
    }

    /// The HTTP status the Web API answers with: usage 400, not found 404, conflict 409, invalid input 422, too
    /// many heavy analyses at once 429, a failure 500; a regression is a result, not an error (200).
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::Usage => 400,
            ErrorKind::NotFound => 404,
            ErrorKind::Conflict => 409,
            ErrorKind::Invalid => 422,
            ErrorKind::TooManyRequests => 429,
            ErrorKind::Failure => 500,
            ErrorKind::Regression => 200,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_design() {
        let pairs = [
            (ErrorKind::Failure, 1, "failure"),
            (ErrorKind::Usage, 2, "usage"),
            (ErrorKind::NotFound, 3, "not_found"),
            (ErrorKind::Conflict, 4, "conflict"),
            (ErrorKind::Regression, 5, "regression"),
            (ErrorKind::Invalid, 1, "invalid"),
            (ErrorKind::TooManyRequests, 1, "too_many_requests"),
        ];
        for (kind, code, name) in pairs {
            assert_eq!(kind.exit_code(), code);
            assert_eq!(kind.code(), name);
        }
    }
}
