//! [`debug_non_exhaustive!`]: the one form of the hand-written `Debug` impls of the
//! workspace.

/// `impl Debug` for a type that shows a few facts about a value and marks the rest as left
/// out (`Name { a: .., b: .., .. }`): the form of the handles, configs and sessions whose
/// other fields are closures, channels, secrets or too large to print.
///
/// `debug_non_exhaustive!(Type, |s| { name: expr, ... })` writes the struct name `Type`;
/// `debug_non_exhaustive!(Type as "Name", |s| { ... })` another name. Each `expr` reads the
/// value through `s` (`&self`).
///
/// ```
/// struct Pool {
///     name: String,
///     conns: Vec<u8>,
///     secret: String,
/// }
/// mcp_tasks_proto::debug_non_exhaustive!(Pool, |p| { name: p.name, conns: p.conns.len() });
///
/// let pool = Pool { name: "db".into(), conns: vec![1, 2], secret: "hunter2".into() };
/// assert_eq!(format!("{pool:?}"), r#"Pool { name: "db", conns: 2, .. }"#);
/// ```
#[macro_export]
macro_rules! debug_non_exhaustive {
    ($ty:ident, |$s:ident| { $($field:ident: $value:expr),* $(,)? }) => {
        $crate::debug_non_exhaustive!($ty as stringify!($ty), |$s| { $($field: $value),* });
    };
    ($ty:ident as $name:expr, |$s:ident| { $($field:ident: $value:expr),* $(,)? }) => {
        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                let $s = self;
                f.debug_struct($name)
                    $(.field(stringify!($field), &$value))*
                    .finish_non_exhaustive()
            }
        }
    };
}
