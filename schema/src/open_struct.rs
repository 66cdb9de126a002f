//! Structures that the format leaves open: unknown keys are accepted and kept
//! (so a save loses nothing) while the known keys are typed.

/// Declares an open structure: the listed keys are typed (and read through
/// the located deserializer, so their errors keep exact positions); every
/// other key is preserved verbatim in `extra`, in document order.
#[macro_export]
macro_rules! open_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $key:literal => $field:ident : $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[serde(rename = $key, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
            /// Keys this reader does not interpret, kept as written.
            #[serde(flatten)]
            pub extra: indexmap::IndexMap<String, serde_json::Value>,
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct OpenVisitor;
                impl<'de> serde::de::Visitor<'de> for OpenVisitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        write!(f, "a map ({})", stringify!($name))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut out = $name::default();
                        while let Some(key) = map.next_key::<String>()? {
                            match key.as_str() {
                                $( $key => out.$field = map.next_value()?, )*
                                _ => {
                                    let value = map.next_value::<serde_json::Value>()?;
                                    out.extra.insert(key, value);
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                deserializer.deserialize_map(OpenVisitor)
            }
        }
    };
}
