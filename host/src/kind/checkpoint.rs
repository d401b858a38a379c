//! The checkpoint operations (declared all or nothing, `nodes` kinds only).

use super::*;

/// Calls one checkpoint export: `$call` is the export's function, given
/// the store and borrowed arguments.
macro_rules! checkpoint_call {
    ($call:ident ( $($arg:ident),* )) => {
        move |p: &Exports, s: &mut Store<CallState>| -> CallFuture<'_, _> {
            Box::pin(async move {
                p.checkpoint_provider(&mut *s)?
                    .$call(s, $(&$arg),*)
                    .await
            })
        }
    };
}

/// Invokes one checkpoint export in `$input`'s scope ([`Kind::invoke_valid`]).
macro_rules! checkpointed {
    ($kind:ident, $operation:ident, $input:expr, $valid:ident, $budget:ident, $call:ident ( $($arg:ident),* )) => {
        $kind
            .invoke_valid($operation, $input, $valid, $budget, checkpoint_call!($call($($arg),*)))
            .await
    };
}

impl CheckpointProvider for Kind {
    async fn initial(&self, allocation: Reference, budget: Budget) -> Result<Compute, Error> {
        let operation = Operation::Initial;
        let input: wit::Reference = allocation.clone().into();
        let raw = self
            .invoke(
                operation,
                on(&allocation),
                budget,
                checkpoint_call!(call_initial(input)),
            )
            .await;
        self.finish(operation, raw, |a| {
            police::constructed(operation, a, 0, None)
        })
    }

    async fn new_compute(
        &self,
        allocation: Reference,
        generation: u64,
        restored_from: Option<SnapshotIdentity>,
        budget: Budget,
    ) -> Result<Compute, Error> {
        let operation = Operation::NewCompute;
        let valid = restored_from
            .as_ref()
            .is_none_or(|from| input::snapshot(from, &allocation));
        let input: wit::Reference = allocation.clone().into();
        let from: Option<wit::SnapshotIdentity> = restored_from.clone().map(Into::into);
        let raw = self
            .invoke_valid(
                operation,
                on(&allocation),
                valid,
                budget,
                move |p: &Exports, s: &mut Store<CallState>| -> CallFuture<'_, _> {
                    Box::pin(async move {
                        p.checkpoint_provider(&mut *s)?
                            .call_new_compute(s, &input, generation, from.as_ref())
                            .await
                    })
                },
            )
            .await;
        self.finish(operation, raw, |a| {
            police::constructed(operation, a, generation, restored_from.as_ref())
        })
    }

    async fn get_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let operation = Operation::GetCompute;
        let valid = input::compute(&incarnation, &allocation);
        let (input, compute): (wit::Reference, wit::Compute) =
            (allocation.clone().into(), incarnation.clone().into());
        let raw = checkpointed!(
            self,
            operation,
            on(&allocation),
            valid,
            budget,
            call_get_compute(input, compute)
        );
        self.finish(operation, raw, |a| {
            police::compute_state(operation, a, &incarnation)
        })
    }

    async fn suspend(
        &self,
        request: SuspendRequest,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let operation = Operation::Suspend;
        let valid = input::suspend(&request);
        let scope = on(&request.reference);
        let input: wit::SuspendRequest = request.clone().into();
        let raw = checkpointed!(self, operation, scope, valid, budget, call_suspend(input));
        self.finish(operation, raw, |a| police::suspended(a, &request))
    }

    async fn resume(&self, request: ResumeRequest, budget: Budget) -> Result<ComputeState, Error> {
        let operation = Operation::Resume;
        let valid = input::resume(&request);
        let scope = on(&request.reference);
        let input: wit::ResumeRequest = request.clone().into();
        let raw = checkpointed!(self, operation, scope, valid, budget, call_resume(input));
        self.finish(operation, raw, |a| police::resumed(a, &request))
    }

    async fn resume_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<ComputeState, Error> {
        let operation = Operation::ResumeCompute;
        let valid = input::existing_compute(&incarnation, &allocation);
        let (input, compute): (wit::Reference, wit::Compute) =
            (allocation.clone().into(), incarnation.clone().into());
        let raw = checkpointed!(
            self,
            operation,
            on(&allocation),
            valid,
            budget,
            call_resume_compute(input, compute)
        );
        self.finish(operation, raw, |a| police::thawed(a, &incarnation))
    }

    async fn kill_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        budget: Budget,
    ) -> Result<(), Error> {
        let operation = Operation::KillCompute;
        let valid = input::existing_compute(&incarnation, &allocation);
        let (input, compute): (wit::Reference, wit::Compute) =
            (allocation.clone().into(), incarnation.into());
        let raw = checkpointed!(
            self,
            operation,
            on(&allocation),
            valid,
            budget,
            call_kill_compute(input, compute)
        );
        self.plain(operation, raw)
    }

    async fn delete_snapshot(
        &self,
        allocation: Reference,
        snapshot: SnapshotIdentity,
        budget: Budget,
    ) -> Result<(), Error> {
        let operation = Operation::DeleteSnapshot;
        let valid = input::snapshot(&snapshot, &allocation);
        let (input, snapshot): (wit::Reference, wit::SnapshotIdentity) =
            (allocation.clone().into(), snapshot.into());
        let raw = checkpointed!(
            self,
            operation,
            on(&allocation),
            valid,
            budget,
            call_delete_snapshot(input, snapshot)
        );
        self.plain(operation, raw)
    }

    async fn run_command_compute(
        &self,
        allocation: Reference,
        incarnation: Compute,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        let valid = input::existing_compute(&incarnation, &allocation) && input::command(&request);
        let (input, compute, command): (wit::Reference, wit::Compute, wit::Command) = (
            allocation.clone().into(),
            incarnation.into(),
            request.into(),
        );
        let raw = self
            .invoke_valid(
                Operation::RunCommandCompute,
                on(&allocation),
                valid,
                budget,
                checkpoint_call!(call_run_command_compute(input, compute, command)),
            )
            .await;
        self.finish(Operation::RunCommandCompute, raw, police::command)
    }
}
