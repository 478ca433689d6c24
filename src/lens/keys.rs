//! The API lenses' keys and endpoints: read from the environment once, resolved per lens.
//!
//! Each API backend names its variables ([`EnvVars`], `ANTHROPIC_API_KEY` and
//! `ANTHROPIC_BASE_URL` say); a lens may name its own key variable (`api_key_env`) and
//! `base_url`, so one panel can hold OpenAI and a local server, or two local servers. What is
//! read is [`ApiVars`]: every backend's variables from the registry and every lens's
//! `api_key_env`, captured at start so that tests hand any values without touching the process
//! environment.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use super::LensSpec;
use reqwest::Url;

/// `scheme://host[:port]` of a URL: what messages name, never a path, query or user info.
pub(crate) fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

fn origin_of_str(url: &str) -> String {
    Url::parse(url).map_or_else(|_| "<invalid URL>".to_owned(), |u| origin_of(&u))
}

/// The variables an API backend reads its key and base URL from by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvVars {
    pub key: &'static str,
    pub base_url: &'static str,
}

/// Where one lens's key and base URL came from, named in messages that tell the user what to
/// fix: its vendor's variables, or the lens's own `api_key_env` and `base_url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    pub key: Cow<'static, str>,
    pub base_url: Cow<'static, str>,
}

impl From<EnvVars> for Sources {
    fn from(vars: EnvVars) -> Self {
        Self {
            key: Cow::Borrowed(vars.key),
            base_url: Cow::Borrowed(vars.base_url),
        }
    }
}

/// One API lens's credentials and endpoint. `Debug` never shows the key.
#[derive(Clone)]
pub struct ApiEnv {
    pub api_key: Option<String>,
    pub base_url: Option<String>,
    /// Where the two came from.
    pub from: Sources,
}

impl ApiEnv {
    /// Trims the values and treats empty ones as unset: a workflow's `${{ secrets.X }}` for a
    /// missing secret is an empty string, and a key read from a file ends with a newline.
    pub fn new(
        from: impl Into<Sources>,
        api_key: Option<String>,
        base_url: Option<String>,
    ) -> Self {
        let clean = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        Self {
            api_key: clean(api_key),
            base_url: clean(base_url),
            from: from.into(),
        }
    }

    /// The key, trimmed; `None` when unset or blank.
    pub(crate) fn key(&self) -> Option<&str> {
        self.api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
    }
}

impl fmt::Debug for ApiEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiEnv")
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("base_url", &self.base_url.as_deref().map(origin_of_str))
            .field("from", &self.from)
            .finish()
    }
}

/// The variables API lenses read, captured once. `Debug` shows their names only.
#[derive(Clone, Default)]
pub struct ApiVars(BTreeMap<String, String>);

impl ApiVars {
    /// Reads, with `var`, the API vendors' variables `vendors` (`registry::apis_from_env` passes
    /// every registered one) and `own`, the variables lenses name as their `api_key_env`.
    pub fn read<'a>(
        vendors: impl IntoIterator<Item = EnvVars>,
        own: impl IntoIterator<Item = &'a str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let vendors = vendors
            .into_iter()
            .flat_map(|v| [v.key.to_owned(), v.base_url.to_owned()]);
        let own = own.into_iter().map(str::to_owned);
        let mut vars = Self::default();
        for name in vendors.chain(own) {
            if let Some(value) = var(&name) {
                vars.0.insert(name, value);
            }
        }
        vars
    }

    /// Sets one variable (tests, and callers that hold values of their own).
    pub fn set(&mut self, name: &str, value: impl Into<String>) -> &mut Self {
        self.0.insert(name.to_owned(), value.into());
        self
    }

    /// Whether `name` holds a non-blank value.
    pub fn is_set(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|v| !v.trim().is_empty())
    }

    /// What a call of the vendor's own (a subscription lens's fallback) is made with: the
    /// vendor's variables.
    pub fn of_vendor(&self, vendor: EnvVars) -> ApiEnv {
        ApiEnv::new(
            vendor,
            self.0.get(vendor.key).cloned(),
            self.0.get(vendor.base_url).cloned(),
        )
    }

    /// What `spec` calls an API whose own variables are `vendor` with: its `api_key_env` and
    /// `base_url` when it names them, else the vendor's variables.
    pub fn for_lens(&self, spec: &LensSpec, vendor: EnvVars) -> ApiEnv {
        let key_var = match &spec.api_key_env {
            Some(name) => Cow::Owned(name.clone()),
            None => Cow::Borrowed(vendor.key),
        };
        let (base_url, base_var) = match &spec.base_url {
            Some(url) => (
                Some(url.clone()),
                Cow::Owned(format!("the `base_url` of lens {}", spec.name)),
            ),
            None => (
                self.0.get(vendor.base_url).cloned(),
                Cow::Borrowed(vendor.base_url),
            ),
        };
        ApiEnv::new(
            Sources {
                key: key_var.clone(),
                base_url: base_var,
            },
            self.0.get(key_var.as_ref()).cloned(),
            base_url,
        )
    }
}

impl fmt::Debug for ApiVars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lens::BackendKind;

    const OPENAI: EnvVars = EnvVars {
        key: "OPENAI_API_KEY",
        base_url: "OPENAI_BASE_URL",
    };

    #[test]
    fn the_key_never_shows_in_debug() {
        let env = ApiEnv::new(
            OPENAI,
            Some("sk-ant-api03-secretsecret\n".to_owned()),
            Some("https://user:pw@proxy.example.test/v1?token=abc".to_owned()),
        );
        assert_eq!(env.key(), Some("sk-ant-api03-secretsecret"));
        let shown = format!("{env:?}");
        assert!(!shown.contains("secretsecret"), "{shown}");
        assert!(!shown.contains("pw"), "{shown}");
        assert!(!shown.contains("abc"), "{shown}");
        assert!(shown.contains("<set>"), "{shown}");
        assert!(shown.contains("https://proxy.example.test"), "{shown}");
        let mut vars = ApiVars::default();
        vars.set("OPENAI_API_KEY", "sk-proj-hidden-value");
        let shown = format!("{vars:?}");
        assert!(
            shown.contains("OPENAI_API_KEY") && !shown.contains("hidden"),
            "{shown}"
        );
    }

    #[test]
    fn blank_values_are_unset() {
        let env = ApiEnv::new(OPENAI, Some("  ".to_owned()), Some(String::new()));
        assert_eq!(env.api_key, None);
        assert_eq!(env.base_url, None);
        assert_eq!(env.key(), None);
    }

    /// Two lenses of one backend, one on the vendor's variables and one on a local server with
    /// a key of its own: each gets its own, and messages name where each came from.
    #[test]
    fn a_lens_may_name_its_own_key_variable_and_base_url() {
        let mut local = LensSpec::new("local", BackendKind::Openai);
        local.api_key_env = Some("LOCAL_LLM_KEY".to_owned());
        local.base_url = Some("http://127.0.0.1:11434/v1".to_owned());
        let cloud = LensSpec::new("cloud", BackendKind::Openai);
        let env = |name: &str| match name {
            "OPENAI_API_KEY" => Some("sk-cloud".to_owned()),
            "OPENAI_BASE_URL" => Some("https://gateway.example.test/v1".to_owned()),
            "LOCAL_LLM_KEY" => Some("ollama".to_owned()),
            "UNRELATED" => Some("never read".to_owned()),
            _ => None,
        };
        let vars = ApiVars::read([OPENAI], ["LOCAL_LLM_KEY"], env);
        assert!(!vars.is_set("UNRELATED"));
        let l = vars.for_lens(&local, OPENAI);
        assert_eq!(
            (l.key(), l.base_url.as_deref()),
            (Some("ollama"), Some("http://127.0.0.1:11434/v1"))
        );
        assert_eq!(l.from.key, "LOCAL_LLM_KEY");
        assert_eq!(l.from.base_url, "the `base_url` of lens local");
        let c = vars.for_lens(&cloud, OPENAI);
        assert_eq!(
            (c.key(), c.base_url.as_deref()),
            (Some("sk-cloud"), Some("https://gateway.example.test/v1"))
        );
        assert_eq!(c.from, Sources::from(OPENAI));
    }
}
