//! The registry: every backend, its name in the config and the [`Backend`] that runs it.
//!
//! One arm of [`backends!`] a backend: it declares the [`BackendKind`] variant, the name the
//! config and the JSON use, and the value that runs it. Everything else — the config's parsing,
//! `doctor`, the credentials masked by value, the API variables read at start — asks the registry,
//! so a new backend is its own file plus one arm here.

use serde::{Deserialize, Serialize};

use super::agent_cli::CliBackend;
use super::api::ApiBackend;
use super::backend::Backend;
use super::keys::ApiVars;
use super::{anthropic, builtin, claude, codex, command, gemini, openai};
use crate::credentials::{OWN_VARS, SecretVar};

macro_rules! backends {
    ($($(#[$doc:meta])* $variant:ident = $name:literal => $backend:expr,)*) => {
        /// Which adapter runs a lens.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum BackendKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl BackendKind {
            /// Its name in the config, the JSON and messages.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(BackendKind::$variant => $name,)*
                }
            }
        }

        /// The backend of each kind.
        pub fn backend(kind: BackendKind) -> &'static dyn Backend {
            match kind {
                $(BackendKind::$variant => $backend,)*
            }
        }

        /// Every kind, in the order `doctor` and the docs list them.
        pub const ALL: &[BackendKind] = &[$(BackendKind::$variant,)*];
    };
}

/// The API variables of every registered vendor and `own` (the lenses' `api_key_env`), read from
/// the process environment.
pub fn apis_from_env<'a>(own: impl IntoIterator<Item = &'a str>) -> ApiVars {
    let vendors = ALL.iter().filter_map(|&kind| backend(kind).api_vars());
    ApiVars::read(vendors, own, |name| std::env::var(name).ok())
}

/// Every variable that holds a credential: reviewbot's own and each backend's.
pub fn secret_vars() -> Vec<SecretVar> {
    let mut vars = OWN_VARS.to_vec();
    for &kind in ALL {
        for var in backend(kind).secret_vars() {
            if !vars.iter().any(|v| v.name == var.name) {
                vars.push(var);
            }
        }
    }
    vars
}

backends! {
    /// Deterministic checks on added lines, no model.
    Builtin = "builtin" => &builtin::Builtin,
    /// Any executable speaking the lens request and response as JSON.
    Command = "command" => &command::Command,
    ClaudeCli = "claude-cli" => &CliBackend::<claude::ClaudeCli>::NEW,
    CodexCli = "codex-cli" => &CliBackend::<codex::CodexCli>::NEW,
    Anthropic = "anthropic" => &ApiBackend::<anthropic::Anthropic>::NEW,
    Openai = "openai" => &ApiBackend::<openai::Openai>::NEW,
    Gemini = "gemini" => &ApiBackend::<gemini::Gemini>::NEW,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lens::AuthClass;

    /// An API vendor names its kind in messages: it is the kind its arm registers.
    #[test]
    fn every_api_vendor_names_the_kind_it_is_registered_under() {
        use crate::lens::api::ApiVendor;
        assert_eq!(anthropic::Anthropic::KIND, BackendKind::Anthropic);
        assert_eq!(openai::Openai::KIND, BackendKind::Openai);
        assert_eq!(gemini::Gemini::KIND, BackendKind::Gemini);
        let api_kinds: Vec<BackendKind> = ALL
            .iter()
            .copied()
            .filter(|&k| backend(k).api_vars().is_some())
            .collect();
        assert_eq!(
            api_kinds,
            [
                BackendKind::Anthropic,
                BackendKind::Openai,
                BackendKind::Gemini
            ]
        );
    }

    #[test]
    fn a_subscription_cli_is_of_its_apis_vendor_and_only_model_backends_have_one() {
        use crate::lens::Vendor;
        for &kind in ALL {
            let b = backend(kind);
            if let Some(api) = b.fallback() {
                assert_eq!(b.vendor(), backend(api).vendor(), "{}", kind.as_str());
            }
            let model = b.runs() != crate::lens::backend::Runs::InProcess;
            assert_eq!(model, b.vendor() != Vendor::None, "{}", kind.as_str());
        }
        let mut a = crate::lens::LensSpec::new("a", BackendKind::Command);
        let b = crate::lens::LensSpec::new("b", BackendKind::Command);
        assert!(!a.same_vendor(&b) && a.same_vendor(&a.clone()));
        a.backend = BackendKind::ClaudeCli;
        assert!(a.same_vendor(&crate::lens::LensSpec::new("c", BackendKind::Anthropic)));
    }

    /// What was one hand-kept list is now each backend's own: none is lost, API keys and base
    /// URLs come from the vendor's variables, and the subscription token never goes to a lens
    /// that names it.
    #[test]
    fn every_credential_variable_comes_from_its_owner() {
        use crate::credentials::{Holds, never_to_a_lens};
        let known = secret_vars();
        let holds = |name: &str| known.iter().find(|v| v.name == name).map(|v| v.holds);
        for name in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "REVIEWBOT_PRIVATE_KEY",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "OPENAI_API_KEY",
            "CODEX_API_KEY",
        ] {
            assert_eq!(holds(name), Some(Holds::Value), "{name}");
        }
        for &kind in ALL {
            if let Some(vars) = backend(kind).api_vars() {
                assert_eq!(holds(vars.key), Some(Holds::Value), "{}", kind.as_str());
                assert_eq!(holds(vars.base_url), Some(Holds::Url), "{}", kind.as_str());
            }
        }
        let names: Vec<&str> = known.iter().map(|v| v.name).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for name in [
            "GITHUB_TOKEN",
            "REVIEWBOT_DATABASE_URL",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ] {
            assert!(never_to_a_lens(&known, name), "{name}");
        }
        assert!(!never_to_a_lens(&known, "OPENAI_API_KEY"));
    }

    #[test]
    fn only_subscription_backends_fall_back_and_only_to_their_vendors_api() {
        for &kind in ALL {
            let b = backend(kind);
            match b.fallback() {
                Some(api) => {
                    assert_eq!(b.auth_class(), AuthClass::Subscription);
                    assert_eq!(backend(api).auth_class(), AuthClass::Api);
                }
                None => assert_ne!(b.auth_class(), AuthClass::Subscription, "{}", kind.as_str()),
            }
        }
        assert_eq!(
            backend(BackendKind::ClaudeCli).fallback(),
            Some(BackendKind::Anthropic)
        );
        assert_eq!(
            backend(BackendKind::CodexCli).fallback(),
            Some(BackendKind::Openai)
        );
    }
}
