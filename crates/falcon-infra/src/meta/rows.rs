//! Reading typed columns from a row of either backend, with errors that name the table and column.

use crate::error::{InfraError, Result};
use sqlx::Row;
use std::str::FromStr;

/// Typed column access shared by SQLite and MySQL rows.
pub(crate) trait RowExt {
    fn text(&self, table: &'static str, col: &str) -> Result<String>;
    fn opt_text(&self, table: &'static str, col: &str) -> Result<Option<String>>;
    fn int(&self, table: &'static str, col: &str) -> Result<i64>;
    fn opt_int(&self, table: &'static str, col: &str) -> Result<Option<i64>>;
    fn real(&self, table: &'static str, col: &str) -> Result<f64>;
    fn opt_real(&self, table: &'static str, col: &str) -> Result<Option<f64>>;

    /// Parses a stored word (a status) into its enum.
    fn parsed<T: FromStr>(&self, table: &'static str, col: &str) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        let text = self.text(table, col)?;
        text.parse().map_err(|e: T::Err| InfraError::CorruptRow { table, message: format!("column {col}: {e}") })
    }

    /// Parses an optional stored word (a `from` status that is NULL on the first history entry).
    fn opt_parsed<T: FromStr>(&self, table: &'static str, col: &str) -> Result<Option<T>>
    where
        T::Err: std::fmt::Display,
    {
        match self.opt_text(table, col)? {
            Some(text) => text
                .parse()
                .map(Some)
                .map_err(|e: T::Err| InfraError::CorruptRow { table, message: format!("column {col}: {e}") }),
            None => Ok(None),
        }
    }

    /// Parses a stored JSON document.
    fn json<T: serde::de::DeserializeOwned>(&self, table: &'static str, col: &str) -> Result<T> {
        let text = self.text(table, col)?;
        serde_json::from_str(&text)
            .map_err(|e| InfraError::CorruptRow { table, message: format!("column {col} is not valid JSON: {e}") })
    }
}

// Text columns are read with `try_get_unchecked` because the schema uses a binary (exact, case-sensitive)
// collation on MySQL, which the driver reports as VARBINARY; the bytes are still checked to be UTF-8.
macro_rules! impl_row_ext {
    ($row:ty) => {
        impl RowExt for $row {
            fn text(&self, table: &'static str, col: &str) -> Result<String> {
                self.try_get_unchecked::<String, _>(col).map_err(|e| corrupt(table, col, e))
            }
            fn opt_text(&self, table: &'static str, col: &str) -> Result<Option<String>> {
                self.try_get_unchecked::<Option<String>, _>(col).map_err(|e| corrupt(table, col, e))
            }
            fn int(&self, table: &'static str, col: &str) -> Result<i64> {
                self.try_get::<i64, _>(col).map_err(|e| corrupt(table, col, e))
            }
            fn opt_int(&self, table: &'static str, col: &str) -> Result<Option<i64>> {
                self.try_get::<Option<i64>, _>(col).map_err(|e| corrupt(table, col, e))
            }
            fn real(&self, table: &'static str, col: &str) -> Result<f64> {
                self.try_get::<f64, _>(col).map_err(|e| corrupt(table, col, e))
            }
            fn opt_real(&self, table: &'static str, col: &str) -> Result<Option<f64>> {
                self.try_get::<Option<f64>, _>(col).map_err(|e| corrupt(table, col, e))
            }
        }
    };
}

impl_row_ext!(sqlx::sqlite::SqliteRow);
impl_row_ext!(sqlx::mysql::MySqlRow);

fn corrupt(table: &'static str, col: &str, e: sqlx::Error) -> InfraError {
    InfraError::CorruptRow { table, message: format!("column {col}: {e}") }
}
