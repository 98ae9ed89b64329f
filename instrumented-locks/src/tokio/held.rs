//! What an async guard carries: the lock's map and who holds its entry, released on drop.

use std::future::Future;
use std::sync::Arc;

use lockdep::{LockMap, Mode, TaskContext, TaskHeld};

use super::auto;
use crate::dep::Site;

/// Who holds a guard's entry.
enum Token {
    /// Nothing is held: validation was off, or the acquisition was outside any
    /// instrumented task (validated, not held).
    None,
    /// An async acquisition: the owner task holds the entry (lockdep's `task_acquire`).
    Task(TaskHeld),
    /// An async acquisition by a tokio task that is not instrumented (see `auto`), with the
    /// task's context, kept alive while the task holds the lock.
    Auto(TaskHeld, Arc<TaskContext>),
    /// A `blocking_*` acquisition: the OS thread holds the entry, as for a blocking lock.
    Thread,
}

/// A held acquisition of an async lock with the map it belongs to: releases it on drop.
/// Guards declare it before tokio's guard, so lockdep hears of the release first.
pub(crate) struct Held<'a> {
    map: Option<&'a LockMap>,
    token: Token,
}

impl<'a> Held<'a> {
    /// Nothing held.
    pub(crate) fn none() -> Held<'a> {
        Held {
            map: None,
            token: Token::None,
        }
    }

    /// An async acquisition of `map` in `mode`, validated now: call it before the lock's
    /// future is first polled.
    #[inline]
    pub(crate) fn acquire(map: Option<&'a LockMap>, mode: Mode, site: Site) -> Held<'a> {
        Held::task(map, mode, false, site)
    }

    #[inline]
    fn task(map: Option<&'a LockMap>, mode: Mode, trylock: bool, site: Site) -> Held<'a> {
        let Some(m) = map.filter(|_| crate::is_enabled()) else {
            return Held::none();
        };
        let token = match auto::uninstrumented_task() {
            Some(id) => {
                let (held, ctx) = auto::acquire(id, m, mode, trylock, site);
                Token::Auto(held, ctx)
            }
            None => Token::Task(lockdep::task_acquire(m, 0, mode, trylock, site)),
        };
        Held { map, token }
    }

    /// A successful try-lock of `map` in `mode`.
    #[inline]
    pub(crate) fn acquired_try(map: Option<&'a LockMap>, mode: Mode, site: Site) -> Held<'a> {
        Held::task(map, mode, true, site)
    }

    /// A `blocking_*` acquisition: validated as a blocking lock of this thread, before it
    /// blocks.
    #[inline]
    pub(crate) fn blocking(map: Option<&'a LockMap>, mode: Mode, site: Site) -> Held<'a> {
        match map {
            Some(m) if crate::is_enabled() => {
                lockdep::acquire(m, 0, mode, false, None, site);
                Held {
                    map,
                    token: Token::Thread,
                }
            }
            _ => Held::none(),
        }
    }

    /// The lock's guard: `tried` (the caller's try-lock) if it got it, else the contended
    /// wait `wait()` runs with the task shown waiting for the lock meanwhile
    /// (`lockdep::TaskHeld::set_waiting`: the dump shows the entry as waited for, not held),
    /// until it completes or is cancelled. So only a contended acquisition marks the task.
    pub(crate) async fn get<G, F: Future<Output = G>>(
        &self,
        tried: Option<G>,
        wait: impl FnOnce() -> F,
    ) -> G {
        /// Ends the shown wait, on completion or cancellation.
        struct Done<'h, 'a>(&'h Held<'a>);
        impl Drop for Done<'_, '_> {
            fn drop(&mut self) {
                self.0.show_waiting(false);
            }
        }
        if let Some(guard) = tried {
            return guard;
        }
        self.show_waiting(true);
        let _done = Done(self);
        wait().await
    }

    fn show_waiting(&self, waiting: bool) {
        if let Token::Task(t) | Token::Auto(t, _) = &self.token {
            t.set_waiting(self.map.filter(|_| waiting));
        }
    }

    /// The held entry's mode changes without validation (a write guard downgraded).
    pub(crate) fn set_mode(&mut self, mode: Mode) {
        let Some(m) = self.map else { return };
        match &self.token {
            Token::Task(t) | Token::Auto(t, _) => lockdep::task_set_held_mode(t, m, mode),
            Token::Thread => lockdep::set_held_mode(m, mode),
            Token::None => {}
        }
    }
}

impl Drop for Held<'_> {
    #[inline]
    fn drop(&mut self) {
        let Some(m) = self.map else { return };
        match std::mem::replace(&mut self.token, Token::None) {
            Token::Task(mut t) => lockdep::task_release(&mut t, m),
            Token::Auto(mut t, _ctx) => lockdep::task_release(&mut t, m),
            Token::Thread => lockdep::release_guard(m),
            Token::None => {}
        }
    }
}
