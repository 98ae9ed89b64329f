//! Held-lock contexts per task: [`instrument`] a future (or `spawn` it, with the `tokio`
//! feature) so that the async locks it holds move with it between worker threads, and so
//! that a blocking guard it holds across an `.await` is reported.
//!
//! An [`Instrumented`] future owns a [`lockdep::TaskContext`] and enters it around every poll
//! of the future it wraps and around that future's drop: the task's held async locks are put
//! on the polling thread's held-lock stack for the poll and taken off after it (see
//! lockdep's `TaskContext`). Blocking locks stay per OS thread. Instrument every task that
//! takes the `tokio` module's locks (the top-level future of `block_on` too); nesting
//! instrumented futures is allowed (each is a task of its own for the locks it takes). A
//! plain `tokio::spawn` task gets a context for each of its acquisitions instead (see the
//! `tokio` module), which finds cycles among async locks but not async → blocking orders or
//! blocking guards held across its awaits.
//!
//! Why an explicit wrapper and not a runtime hook: tokio's per-poll hooks
//! (`Builder::on_before_task_poll` / `on_after_task_poll`) exist only under
//! `--cfg tokio_unstable` (as do the task spawn and terminate hooks), and the after-poll hook
//! is not told whether the poll returned `Pending`, which the held-across-await check needs.
//! A wrapper works on every runtime and executor (multi-thread, current-thread,
//! `LocalSet`, `futures::executor`), because it is the future itself that is polled.
//!
//! Without the `validate` feature, or with validation switched off at run time
//! ([`set_enabled`](crate::set_enabled)), an instrumented future is its future.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

use lockdep::TaskContext;

/// A future whose held async locks are tracked per task ([`instrument`]). `Send` if `F` is.
pub struct Instrumented<F> {
    fut: ManuallyDrop<F>,
    ctx: TaskContext,
}

/// Wraps `fut` so that its async locks are held per task (see the [module docs](self)).
pub fn instrument<F: Future>(fut: F) -> Instrumented<F> {
    Instrumented {
        fut: ManuallyDrop::new(fut),
        ctx: TaskContext::new(),
    }
}

impl<F> Instrumented<F> {
    /// The task's number, as reports print it ("task 17 on tokio-runtime-worker/3").
    pub fn task_id(&self) -> u64 {
        self.ctx.id()
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `fut` is pinned structurally: it is never moved out of `self` (it is only
        // dropped in place, by `Drop`), and `ctx` is never pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above; `this` comes from a pinned `Self`.
        let fut = unsafe { Pin::new_unchecked(&mut *this.fut) };
        if !crate::is_enabled() {
            return fut.poll(cx);
        }
        let scope = this.ctx.enter();
        let out = fut.poll(cx);
        scope.exit(out.is_pending());
        out
    }
}

impl<F> Drop for Instrumented<F> {
    fn drop(&mut self) {
        // The future's guards (a cancelled or aborted task's) release the task's entries;
        // inside the context they do so from this thread's stack and reports name the task
        // (outside it they would leave the record: also correct).
        let _scope = crate::is_enabled().then(|| self.ctx.enter());
        // SAFETY: `fut` is dropped exactly once, here, in place, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.fut) };
    }
}

impl<F> std::fmt::Debug for Instrumented<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instrumented")
            .field("task", &self.ctx.id())
            .finish_non_exhaustive()
    }
}

/// `tokio::spawn(instrument(fut))`: spawns an instrumented task on the current runtime.
/// Panics as `tokio::spawn` does (outside a runtime).
#[cfg(feature = "tokio")]
#[track_caller]
pub fn spawn<F>(fut: F) -> ::tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    ::tokio::spawn(instrument(fut))
}

/// `tokio::task::spawn_local(instrument(fut))`: spawns an instrumented `!Send` task on the
/// current `LocalSet`. Panics as `spawn_local` does (outside a `LocalSet`).
#[cfg(feature = "tokio")]
#[track_caller]
pub fn spawn_local<F>(fut: F) -> ::tokio::task::JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    ::tokio::task::spawn_local(instrument(fut))
}
