//! A call that runs to its end even when its caller stops waiting.

/// A future that runs to its end even when its caller stops waiting: it is
/// polled in the caller's task (no hand-over while the caller waits), and
/// when dropped unfinished it goes on in a task of its own. A caller that
/// leaves ends its wait, never the call (a half-run Create or command
/// helps nobody, and the reference's turn stays held until it ends).
pub(crate) struct RunsToEnd<T: Send + 'static> {
    work: Option<std::pin::Pin<Box<dyn Future<Output = T> + Send>>>,
}

impl<T: Send + 'static> RunsToEnd<T> {
    pub(crate) fn new(work: impl Future<Output = T> + Send + 'static) -> Self {
        Self {
            work: Some(Box::pin(work)),
        }
    }
}

impl<T: Send + 'static> Future for RunsToEnd<T> {
    type Output = T;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<T> {
        let this = self.get_mut();
        let Some(work) = this.work.as_mut() else {
            return std::task::Poll::Pending;
        };
        let polled = work.as_mut().poll(context);
        if polled.is_ready() {
            this.work = None;
        }
        polled
    }
}

impl<T: Send + 'static> Drop for RunsToEnd<T> {
    fn drop(&mut self) {
        // Outside a runtime (its shutdown) there is nowhere to go on.
        if let (Some(work), Ok(runtime)) = (self.work.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(work);
        }
    }
}
