//! Pages: every list a front end returns has one shape, `{"items": [...], "next_cursor": null | "…"}`. A
//! cursor is opaque to callers: pass back the `next_cursor` of one page to get the next; `null` means the
//! list is complete.

use crate::{AppError, Result};
use serde::Serialize;

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Page<T> {
    /// The rows of this page.
    pub items: Vec<T>,
    /// The cursor of the next page; `None` (JSON `null`) on the last one.
    pub next_cursor: Option<String>,
}

const OFFSET_PREFIX: &str = "o";

impl<T> Page<T> {
    /// A page of `limit` rows of a list held whole, from the offset `cursor` encodes (the start without one).
    /// An offset past the end (the list shrank since) is an empty last page.
    pub fn of_all(all: Vec<T>, cursor: Option<&str>, limit: usize) -> Result<Page<T>> {
        let start = match cursor {
            None => 0,
            Some(c) => c
                .strip_prefix(OFFSET_PREFIX)
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| bad_cursor(c))?
                .min(all.len()),
        };
        let end = start.saturating_add(limit).min(all.len());
        let next_cursor = (end < all.len() && limit > 0).then(|| format!("{OFFSET_PREFIX}{end}"));
        let items = all.into_iter().skip(start).take(end - start).collect();
        Ok(Page { items, next_cursor })
    }
}

/// The error for a cursor no page of this list returned.
pub fn bad_cursor(cursor: &str) -> AppError {
    AppError::usage(format!("cursor {cursor:?} is not a cursor of this list"))
        .with_hint("pass the `next_cursor` of the previous page, unchanged")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_pages_walk_the_whole_list_once() {
        let all: Vec<u32> = (0..7).collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = Page::of_all(all.clone(), cursor.as_deref(), 3).unwrap();
            seen.extend(page.items);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, all);
        assert_eq!(Page::of_all(all.clone(), None, 0).unwrap(), Page { items: vec![], next_cursor: None });
        assert_eq!(Page::of_all(all.clone(), None, 7).unwrap().next_cursor, None);
        // A list that shrank under a cursor: an empty last page, not an error.
        assert_eq!(Page::of_all(all.clone(), Some("o99"), 3).unwrap(), Page { items: vec![], next_cursor: None });
        assert!(Page::of_all(all.clone(), Some("nonsense"), 3).is_err());
        assert!(Page::of_all(all, Some("o+1"), 3).is_err());
    }
}
