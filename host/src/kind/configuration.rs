//! The configuration adapter, selection discovery and credential
//! verification: pure or read-only calls, with credentials handed to the
//! component only as handles (`crate::credential`).

use super::*;
use crate::bindings::exports::oac::sandbox_provider::configuration_adapter::Configuration as WitConfiguration;

/// Calls one configuration-adapter export.
macro_rules! adapter_call {
    ($call:ident ( $($arg:expr),* )) => {{
        move |p: &Exports, s: &mut Store<CallState>| -> CallFuture<'_, _> {
            Box::pin(async move {
                p.configuration_adapter(&mut *s)?
                    .$call(s, $($arg),*)
                    .await
            })
        }
    }};
}

/// Invokes a configuration export in a pure scope: no capability, nothing
/// logged. The call holds no credential value (only handles), but the
/// values (`$secrets`) are kept out of its log lines all the same.
macro_rules! pure {
    ($kind:ident, $operation:ident, $budget:ident, $secrets:expr, $call:ident ( $($arg:expr),* )) => {
        $kind
            .invoke(
                $operation,
                CallInput::from(CallScope::pure()).keeping($secrets),
                $budget,
                adapter_call!($call($($arg),*)),
            )
            .await
    };
}

impl Kind {
    /// A `nodes` kind's configuration is the node's file: its public object
    /// is always `{}` and it takes no credential.
    fn node_rule(&self, configuration: &Configuration) -> bool {
        self.registration.mode != Mode::Nodes
            || (configuration.credential.is_none()
                && matches!(
                    serde_json::from_str::<serde_json::Value>(&configuration.public),
                    Ok(serde_json::Value::Object(map)) if map.is_empty()
                ))
    }

    /// `configuration` as the component sees it (its credential a handle
    /// of `handed`), or `Unfit`: a credential that does not fit the shape,
    /// or a `nodes` kind's configuration that is not the node's rule.
    fn give(
        &self,
        handed: &mut Handed<'_>,
        configuration: &Configuration,
    ) -> Result<WitConfiguration, Unfit> {
        if !self.node_rule(configuration) {
            return Err(Unfit);
        }
        handed.configuration(configuration)
    }

    /// Whether a candidate credential fits the kind's declared shape.
    pub(super) fn fits(&self, credential: Option<&str>) -> bool {
        credential
            .is_none_or(|text| Checked::parse(&self.registration.credential_fields, text).is_some())
    }

    /// [`Self::plain`] for an adapter answer of `operation`, which Core may
    /// show and log: its handles turned back into the credentials `handed`
    /// out (any other handle is the unknown outcome), and an answer that
    /// carries any of them, in any obvious encoding, in its public or
    /// metadata text not accepted.
    fn configured<T, U: Shown + Clone + PartialEq>(
        &self,
        operation: Operation,
        raw: Result<Result<T, wit::Error>, Error>,
        handed: &Handed<'_>,
        back: impl FnOnce(T) -> Result<U, Unfit>,
    ) -> Result<U, Error> {
        let raw = match raw {
            Ok(Ok(answer)) => match back(answer) {
                Ok(answer) => Ok(Ok(answer)),
                Err(Unfit) => {
                    tracing::warn!(kind = %self.registration.kind, event = "credential_handle_unknown", "answer refused");
                    return Err(police::unknown(operation));
                }
            },
            Ok(Err(error)) => Ok(Err(error)),
            Err(error) => Err(error),
        };
        self.shown(operation, raw, &handed.values())
    }

    /// [`Self::plain`] for an answer Core may show and log: one carrying
    /// any of `secrets`, in any obvious encoding, is not accepted.
    pub(super) fn shown<T, U: From<T> + Shown + Clone + PartialEq>(
        &self,
        operation: Operation,
        raw: Result<Result<T, wit::Error>, Error>,
        secrets: &[String],
    ) -> Result<U, Error> {
        debug_assert_eq!(police::rule(operation), police::Rule::Shown);
        let answer: U = self.plain(operation, raw)?;
        let secrets = Secrets::new(secrets.iter().map(String::as_str));
        if self.policing == Policing::Enforced && secrets.found_in_any(answer.shown()) {
            tracing::warn!(kind = %self.registration.kind, event = "credential_in_public_answer", "answer refused");
            return Err(police::unknown(operation));
        }
        Ok(answer)
    }

    /// The answer to configuration input that cannot be called with: a
    /// credential that does not fit the kind's shape, or a `nodes` kind's
    /// configuration that is not the node's rule. Unsupported still says
    /// so first, whatever the input.
    fn unfit<T>(&self, operation: Operation) -> Result<T, Error> {
        self.admit(operation, &CallScope::pure(), false)?;
        Err(Error::Invalid)
    }

    /// Handles for the credentials of one configuration call.
    fn handed(&self) -> Handed<'_> {
        Handed::new(&self.registration.credential_fields)
    }
}

impl Kind {
    /// What `binding` gives a direct kind, checked as [`Host::check_configured`]
    /// describes; the key path and reason of the first fault.
    ///
    /// [`Host::check_configured`]: crate::Host::check_configured
    pub(crate) async fn check_configured(
        &self,
        binding: &crate::NodeBinding,
    ) -> Result<(), (String, &'static str)> {
        if self.registration.mode != crate::registry::Mode::Direct {
            return Ok(());
        }
        let shape = &self.registration.credential_fields;
        let credential = binding.credential.clone();
        // Whether one is required is the component's requirements' to say,
        // and loading already refused a required one that is missing.
        if let Some(fault) = credential
            .as_deref()
            .and_then(|text| crate::credential::misfit(shape, text))
        {
            return Err(fault);
        }
        if !self.declaration.supports(Operation::DecodeInput) {
            return Ok(());
        }
        let public = binding.configuration.to_string();
        let budget =
            Budget::from_millis(self.registration.policy.default_budget_ms).unwrap_or(Budget::MAX);
        match self.decode_input(public, credential, budget).await {
            Ok(_) => Ok(()),
            Err(Error::Invalid) => Err((
                "configuration".into(),
                "is refused by the component's decode-input (invalid); see `describe` for what the kind takes",
            )),
            Err(_) => Err((
                "configuration".into(),
                "could not be checked: the component's decode-input did not answer",
            )),
        }
    }
}

/// The credentials of `configurations`, to redact.
pub(super) fn credentials<'a>(
    configurations: impl IntoIterator<Item = &'a Configuration>,
) -> Vec<String> {
    configurations
        .into_iter()
        .filter_map(|c| c.credential.clone())
        .collect()
}

impl ConfigurationProvider for Kind {
    async fn requirements(&self, budget: Budget) -> Result<ConfigurationRequirements, Error> {
        let found = self
            .invoke(
                Operation::Requirements,
                CallScope::pure(),
                budget,
                move |p, s| {
                    Box::pin(
                        async move { p.configuration_adapter(&mut *s)?.call_requirements(s).await },
                    )
                },
            )
            .await?;
        Ok(found.into())
    }

    async fn decode_input(
        &self,
        public: String,
        credential: Option<String>,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::DecodeInput;
        let input = Configuration { public, credential };
        let mut handed = self.handed();
        let Ok(given) = self.give(&mut handed, &input) else {
            return self.unfit(operation);
        };
        let raw = pure!(
            self,
            operation,
            budget,
            credentials([&input]),
            call_decode_input(&given.public, given.credential.as_ref())
        );
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn encode(
        &self,
        configuration: Configuration,
        budget: Budget,
    ) -> Result<StoredConfiguration, Error> {
        let operation = Operation::Encode;
        let mut handed = self.handed();
        let Ok(given) = self.give(&mut handed, &configuration) else {
            return self.unfit(operation);
        };
        let raw = pure!(
            self,
            operation,
            budget,
            credentials([&configuration]),
            call_encode(&given)
        );
        self.configured(operation, raw, &handed, |a| handed.back_stored(a))
    }

    async fn decode(
        &self,
        stored: StoredConfiguration,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::Decode;
        let secrets: Vec<String> = stored
            .secret
            .iter()
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .collect();
        let mut handed = self.handed();
        let Ok(given) = handed.stored(&stored) else {
            return self.unfit(operation);
        };
        let raw = pure!(self, operation, budget, secrets, call_decode(&given));
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn normalize(
        &self,
        configuration: Configuration,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::Normalize;
        let mut handed = self.handed();
        let Ok(given) = self.give(&mut handed, &configuration) else {
            return self.unfit(operation);
        };
        let raw = pure!(
            self,
            operation,
            budget,
            credentials([&configuration]),
            call_normalize(&given)
        );
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn resolve_change(
        &self,
        next: Configuration,
        previous: Configuration,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::ResolveChange;
        let mut handed = self.handed();
        let (Ok(given), Ok(before)) = (
            self.give(&mut handed, &next),
            self.give(&mut handed, &previous),
        ) else {
            return self.unfit(operation);
        };
        let secrets = credentials([&next, &previous]);
        let raw = pure!(
            self,
            operation,
            budget,
            secrets,
            call_resolve_change(&given, &before)
        );
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn equal(
        &self,
        left: Configuration,
        right: Configuration,
        budget: Budget,
    ) -> Result<bool, Error> {
        let operation = Operation::Equal;
        let mut handed = self.handed();
        let (Ok(one), Ok(other)) = (
            self.give(&mut handed, &left),
            self.give(&mut handed, &right),
        ) else {
            return self.unfit(operation);
        };
        let raw = pure!(
            self,
            operation,
            budget,
            credentials([&left, &right]),
            call_equal(&one, &other)
        );
        self.plain(operation, raw)
    }

    async fn with_credential(
        &self,
        owner: Configuration,
        candidate: String,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::WithCredential;
        let mut handed = self.handed();
        let (Ok(given), Ok(handle)) = (handed.configuration(&owner), handed.hand(&candidate))
        else {
            return self.unfit(operation);
        };
        let mut secrets = credentials([&owner]);
        secrets.push(candidate);
        let raw = pure!(
            self,
            operation,
            budget,
            secrets,
            call_with_credential(&given, &handle)
        );
        self.configured(operation, raw, &handed, |a| handed.back(a))
    }

    async fn discover_configuration(
        &self,
        query: String,
        budget: Budget,
    ) -> Result<Vec<String>, Error> {
        let operation = Operation::DiscoverConfiguration;
        let raw = self
            .invoke(
                operation,
                CallScope::node_read(),
                budget,
                adapter_call!(call_discover_configuration(&query)),
            )
            .await;
        self.plain(operation, raw)
    }
}
