//! What every persistent store does with the version of its schema: refuse one written by
//! a newer build, and find the migration that takes it one version further.

use crate::StoreError;

/// Refuse a schema written by a newer build: `found` is the version the store holds,
/// `known` the one this build writes, `what` names the store (`"t.db: the database"`).
///
/// # Errors
/// [`StoreError::Unavailable`] when `found` is above `known`.
pub fn refuse_newer(what: &str, found: i64, known: i64) -> Result<(), StoreError> {
    if found > known {
        return Err(StoreError::Unavailable(format!(
            "{what} was written by a newer version of mcp-tasks (schema version {found}; this \
             build knows versions up to {known}); refusing to open it"
        )));
    }
    Ok(())
}

/// The migration that takes a schema from `version` to `version + 1`, where
/// `migrations[n]` takes it from `n`; `target` names the store.
///
/// # Errors
/// [`StoreError::Corrupt`] for a version no migration starts from.
pub fn migration<'a>(
    migrations: &[&'a str],
    version: i64,
    target: &str,
) -> Result<&'a str, StoreError> {
    usize::try_from(version)
        .ok()
        .and_then(|step| migrations.get(step).copied())
        .ok_or_else(|| StoreError::Corrupt(format!("{target}: unknown schema version {version}")))
}

/// A new key for the cursors of a store (its `cursor_key`, written when the store is
/// created): 32 bytes from the OS random number generator.
///
/// # Errors
/// [`StoreError::Unavailable`] when the generator fails.
pub fn new_cursor_key() -> Result<[u8; 32], StoreError> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| {
        StoreError::Unavailable(format!("the OS random number generator failed: {e}"))
    })?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_schema_is_refused_naming_both_versions() {
        assert!(refuse_newer("t.db: the database", 2, 2).is_ok());
        let err = refuse_newer("t.db: the database", 3, 2).unwrap_err();
        assert!(matches!(err, StoreError::Unavailable(_)));
        let msg = err.to_string();
        assert!(
            msg.contains("t.db: the database was written by a newer version of mcp-tasks"),
            "{msg}"
        );
        assert!(
            msg.contains("schema version 3; this build knows versions up to 2"),
            "{msg}"
        );
    }

    #[test]
    fn migrations_are_found_by_the_version_they_start_from() {
        let m = ["zero", "one"];
        assert_eq!(migration(&m, 1, "db").unwrap(), "one");
        for v in [-1, 2] {
            let err = migration(&m, v, "db").unwrap_err();
            assert!(matches!(err, StoreError::Corrupt(_)), "{v}");
            assert!(
                err.to_string().contains("db: unknown schema version"),
                "{v}"
            );
        }
    }
}
