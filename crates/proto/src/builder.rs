//! [`setters!`] and [`default_is_new!`]: the one form of the plain builder setters of the
//! workspace, and of a `Default` that is `new()`.

/// Builder setters that each set one field and return `self`
/// (`fn name(mut self, field: Type) -> Self`, `#[must_use]`): the form of the configs'
/// setters that only store their argument.
///
/// `setters! { /// doc  pub fn name(field: Type); ... }` inside an `impl` block writes one
/// such method a line; its parameter is named after the field it sets.
///
/// ```
/// #[derive(Default)]
/// struct Config {
///     port: u16,
///     name: Option<String>,
/// }
/// impl Config {
///     mcp_tasks_proto::setters! {
///         /// The port.
///         pub fn with_port(port: u16);
///         /// The name, if any.
///         pub fn with_name(name: Option<String>);
///     }
/// }
///
/// let c = Config::default().with_port(8080).with_name(Some("a".into()));
/// assert_eq!((c.port, c.name.as_deref()), (8080, Some("a")));
/// ```
#[macro_export]
macro_rules! setters {
    ($($(#[$attr:meta])* $vis:vis fn $name:ident($field:ident: $ty:ty);)*) => {
        $(
            $(#[$attr])*
            #[must_use]
            $vis fn $name(mut self, $field: $ty) -> Self {
                self.$field = $field;
                self
            }
        )*
    };
}

/// `impl Default` as `Self::new()`, for a type whose `new()` takes no argument.
///
/// ```
/// struct Counter(u32);
/// impl Counter {
///     fn new() -> Self {
///         Self(1)
///     }
/// }
/// mcp_tasks_proto::default_is_new!(Counter);
///
/// assert_eq!(Counter::default().0, 1);
/// ```
#[macro_export]
macro_rules! default_is_new {
    ($ty:ty) => {
        impl ::std::default::Default for $ty {
            fn default() -> Self {
                Self::new()
            }
        }
    };
}
