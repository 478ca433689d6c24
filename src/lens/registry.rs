//! The registry: which [`Backend`] runs each [`BackendKind`].

use super::agent_cli::CliBackend;
use super::api::ApiBackend;
use super::backend::Backend;
use super::{BackendKind, anthropic, builtin, claude, codex, command, openai};

/// The registry: the backend of each kind.
pub fn backend(kind: BackendKind) -> &'static dyn Backend {
    match kind {
        BackendKind::Builtin => &builtin::Builtin,
        BackendKind::Command => &command::Command,
        BackendKind::ClaudeCli => &CliBackend::<claude::ClaudeCli>::NEW,
        BackendKind::CodexCli => &CliBackend::<codex::CodexCli>::NEW,
        BackendKind::Anthropic => &ApiBackend::<anthropic::Anthropic>::NEW,
        BackendKind::Openai => &ApiBackend::<openai::Openai>::NEW,
    }
}

/// Every kind, in the order `doctor` and the docs list them.
pub const ALL: [BackendKind; 6] = [
    BackendKind::Builtin,
    BackendKind::Command,
    BackendKind::ClaudeCli,
    BackendKind::CodexCli,
    BackendKind::Anthropic,
    BackendKind::Openai,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lens::AuthClass;

    #[test]
    fn every_kind_is_registered_under_its_own_kind() {
        for kind in ALL {
            assert_eq!(backend(kind).kind(), kind, "{}", kind.as_str());
        }
    }

    #[test]
    fn a_subscription_cli_is_of_its_apis_vendor_and_only_model_backends_have_one() {
        use crate::lens::Vendor;
        for kind in ALL {
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

    #[test]
    fn only_subscription_backends_fall_back_and_only_to_their_vendors_api() {
        for kind in ALL {
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
