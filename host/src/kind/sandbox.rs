//! The provider interface as Core calls it on a loaded kind: the five
//! required operations, observation, selection discovery and credential
//! verification, each checked, run (a change in its allocation's turn) and
//! policed.

use super::configuration::credentials;
use super::*;

/// A call's answer and what its settlement claim may rest on (a call that
/// ended without an answer claims nothing).
fn with_evidence<T>(raw: Result<(T, Evidence), Error>) -> (Result<T, Error>, Evidence) {
    match raw {
        Ok((answer, evidence)) => (Ok(answer), evidence),
        Err(error) => (Err(error), Evidence::Answer),
    }
}

/// GetInfo, Renew and Kill with what their settlement claim rested on: the
/// node sends the host's record with an answer that claims settlement on
/// it, so that Core's side judges it by the same rule.
#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
impl Kind {
    /// [`SandboxProvider::get_info`] and what its claim rested on.
    pub async fn get_info_on_record(
        &self,
        allocation: Reference,
        budget: Budget,
    ) -> (Result<Info, Error>, Evidence) {
        let input = allocation.clone().into();
        let recorded = self.recorded(&allocation);
        let raw = self
            .invoke(Operation::GetInfo, on(&allocation), budget, move |p, s| {
                Box::pin(async move {
                    let answer = p
                        .sandbox_provider(&mut *s)?
                        .call_get_info(&mut *s, &input)
                        .await?;
                    Ok((answer, recorded.await))
                })
            })
            .await;
        let (raw, evidence) = with_evidence(raw);
        let answer = self.finish(Operation::GetInfo, raw, |a| {
            police::read(a, &allocation, &evidence)
        });
        (answer, evidence)
    }

    /// [`SandboxProvider::renew`] and what its claim rested on.
    pub async fn renew_on_record(
        &self,
        allocation: Reference,
        budget: Budget,
    ) -> (Result<Info, Failure>, Evidence) {
        let input = allocation.clone().into();
        let recorded = self.recorded(&allocation);
        let raw = self
            .invoke(Operation::Renew, on(&allocation), budget, move |p, s| {
                Box::pin(async move {
                    let answer = p
                        .sandbox_provider(&mut *s)?
                        .call_renew(&mut *s, &input)
                        .await?;
                    Ok((answer, recorded.await))
                })
            })
            .await;
        let (raw, evidence) = with_evidence(raw);
        let answer = self.finish(Operation::Renew, raw, |a| {
            police::mutation(Operation::Renew, a, &allocation, &evidence)
        });
        (answer, evidence)
    }

    /// [`SandboxProvider::kill`] and what its claim rested on.
    pub async fn kill_on_record(
        &self,
        allocation: Reference,
        budget: Budget,
    ) -> (Result<Info, Failure>, Evidence) {
        let input = allocation.clone().into();
        let recorded = self.recorded(&allocation);
        let checked = self.policing == Policing::Enforced;
        let raw = self
            .invoke(Operation::Kill, on(&allocation), budget, move |p, s| {
                Box::pin(async move {
                    let answer = p
                        .sandbox_provider(&mut *s)?
                        .call_kill(&mut *s, &input)
                        .await?;
                    // Absence is checked where the host can see: anything
                    // of the allocation left makes the answer unknown.
                    let claims_absence = matches!(&answer, Ok(info)
                        if info.state == wit::LifecycleState::Absent);
                    let left = s.data().capabilities.call.allocation_left();
                    if checked && claims_absence && left.await {
                        let kind = &s.data().capabilities.call.capabilities.kind;
                        tracing::warn!(%kind, event = "kill_left_resources", "absence refused");
                        let unknown = wit::Failure {
                            error: wit::Error::ComputeUnconfirmed,
                            info: None,
                        };
                        return Ok((Err(unknown), Evidence::Answer));
                    }
                    Ok((answer, recorded.await))
                })
            })
            .await;
        let (raw, evidence) = with_evidence(raw);
        let answer = self.finish(Operation::Kill, raw, |a| {
            police::mutation(Operation::Kill, a, &allocation, &evidence)
        });
        (answer, evidence)
    }
}

#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
impl SandboxProvider for Kind {
    type Checkpoint<'a> = &'a Kind;

    fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    fn checkpoint(&self) -> Option<&Kind> {
        self.declaration.supports_checkpoint().then_some(self)
    }

    async fn create(&self, request: Bootstrap, budget: Budget) -> Result<Info, Failure> {
        if !input::bootstrap(&request) || !self.capabilities.enforces(request.network_access) {
            return Err(Error::Invalid.into());
        }
        let allocation = request.reference.clone();
        let credential = request.daemon_credential.clone();
        let daemon_credential = Secrets::new([credential.as_str()]);
        let input = request.into();
        let scope = on(&allocation);
        self.admit(Operation::Create, &scope, true)?;
        let raw = self
            .run(
                Operation::Create,
                CallInput::from(scope).keeping([credential]),
                budget,
                move |p, s| {
                    Box::pin(
                        async move { p.sandbox_provider(&mut *s)?.call_create(s, &input).await },
                    )
                },
                self.record_settlement(&allocation),
            )
            .await
            .map_err(|_| police::unknown(Operation::Create));
        let answer = self.finish(Operation::Create, raw, |a| {
            police::mutation(Operation::Create, a, &allocation, &Evidence::Answer)
        });
        // The daemon credential goes into the compute, never back to Core.
        if self.policing == Policing::Enforced && daemon_credential.found_in_any(answer.shown()) {
            tracing::warn!(kind = %self.registration.kind, event = "credential_in_answer", "answer refused");
            return Err(police::unknown(Operation::Create).into());
        }
        answer
    }

    async fn get_info(&self, allocation: Reference, budget: Budget) -> Result<Info, Error> {
        self.get_info_on_record(allocation, budget).await.0
    }

    async fn renew(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        self.renew_on_record(allocation, budget).await.0
    }

    async fn kill(&self, allocation: Reference, budget: Budget) -> Result<Info, Failure> {
        self.kill_on_record(allocation, budget).await.0
    }

    async fn run_command(
        &self,
        allocation: Reference,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        if !request.is_valid() {
            return Err(Error::Invalid);
        }
        let (on_allocation, input) = (allocation.clone().into(), request.into());
        let raw = self
            .invoke(
                Operation::RunCommand,
                on(&allocation),
                budget,
                move |p, s| {
                    Box::pin(async move {
                        p.sandbox_provider(&mut *s)?
                            .call_run_command(s, &on_allocation, &input)
                            .await
                    })
                },
            )
            .await;
        self.finish(Operation::RunCommand, raw, police::command)
    }

    async fn observe(&self, target: Target, budget: Budget) -> Result<Sample, Error> {
        let scope = CallScope::reading(vec![target.reference.clone()]);
        let input = target.into();
        let raw = self
            .invoke(Operation::Observe, scope, budget, move |p, s| {
                Box::pin(
                    async move { p.observation_source(&mut *s)?.call_observe(s, &input).await },
                )
            })
            .await;
        self.finish(Operation::Observe, raw, police::observation)
    }

    async fn observe_batch(
        &self,
        targets: Vec<Target>,
        budget: Budget,
    ) -> Result<Vec<Result<Sample, Error>>, Error> {
        if targets.len() > MAX_BATCH_TARGETS {
            return Err(Error::Invalid);
        }
        let count = targets.len();
        let scope = CallScope::reading(targets.iter().map(|t| t.reference.clone()).collect());
        let input: Vec<_> = targets.into_iter().map(Into::into).collect();
        let raw = self
            .invoke(Operation::ObserveBatch, scope, budget, move |p, s| {
                Box::pin(async move {
                    p.batch_observation_source(&mut *s)?
                        .call_observe_batch(s, &input)
                        .await
                })
            })
            .await;
        let raw = raw.map(|answer| {
            answer.map(|samples| {
                samples
                    .into_iter()
                    .map(|sample| sample.map(Sample::from).map_err(Error::from))
                    .collect::<Vec<_>>()
            })
        });
        self.finish(Operation::ObserveBatch, raw, |samples| {
            police::batch(samples, count)
        })
    }

    async fn discover_selection(
        &self,
        candidate: Configuration,
        budget: Budget,
    ) -> Result<Configuration, Error> {
        let operation = Operation::DiscoverSelection;
        let secrets = credentials([&candidate]);
        let valid = self.fits(candidate.credential.as_deref());
        let Configuration { public, credential } = candidate;
        // Read-only: a scope of no allocation that may only read.
        let read_only = CallScope::node_read();
        // The candidate's credential goes to the vendor in this call's HTTP
        // requests, never into the component.
        let input = CallInput::from(read_only).carrying(credential.clone());
        let raw = self
            .invoke_valid(operation, input, valid, budget, move |p, s| {
                Box::pin(async move {
                    let resolved = p
                        .selection_discoverer(&mut *s)?
                        .call_discover_selection(s, &public)
                        .await?;
                    Ok(resolved.map(|public| Configuration { public, credential }))
                })
            })
            .await;
        // Policed as a configuration answer: its public object is shown.
        self.shown(operation, raw, &secrets)
    }

    async fn verify_credential(
        &self,
        candidate: Configuration,
        references: Vec<Reference>,
        budget: Budget,
    ) -> Result<(), Error> {
        let operation = Operation::VerifyCredential;
        let valid =
            references.len() <= MAX_BATCH_TARGETS && self.fits(candidate.credential.as_deref());
        let Configuration { public, credential } = candidate;
        // Read-only, reaching only the given allocations.
        let scope = CallScope::reading(references.clone());
        let references: Vec<wit::Reference> = references.into_iter().map(Into::into).collect();
        let input = CallInput::from(scope).carrying(credential);
        let raw = self
            .invoke_valid(operation, input, valid, budget, move |p, s| {
                Box::pin(async move {
                    p.credential_verifier(&mut *s)?
                        .call_verify_credential(s, &public, &references)
                        .await
                })
            })
            .await;
        self.plain(operation, raw)
    }

    async fn probe(&self, budget: Budget) -> Result<Vec<Diagnostic>, Error> {
        let found = self
            .invoke(
                Operation::Probe,
                CallScope::node_read(),
                budget,
                move |p, s| Box::pin(async move { p.readiness(&mut *s)?.call_probe(s).await }),
            )
            .await?;
        Ok(found.into_iter().map(Into::into).collect())
    }
}
