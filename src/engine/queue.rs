//! Work on one device runs one piece at a time, in the order it was asked for: overlapping
//! evaluations and reads (`Promise.all`) wait for their turn instead of interleaving their
//! error scopes and submissions at await points. Single-threaded, like the wasm instance.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::future::poll_fn;
use std::task::{Poll, Waker};

#[derive(Default)]
pub struct Turnstile {
    next: Cell<u64>,
    serving: Cell<u64>,
    /// Tickets whose holders stopped waiting (their futures were dropped).
    abandoned: RefCell<BTreeSet<u64>>,
    waiters: RefCell<Vec<Waker>>,
}

/// The right to use the device; the next waiter's turn comes when it is dropped.
pub struct Turn<'a> {
    stile: &'a Turnstile,
}

/// A place in the line; dropping it before its turn gives the place up.
struct Ticket<'a> {
    stile: &'a Turnstile,
    number: u64,
    served: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.served {
            self.stile.abandoned.borrow_mut().insert(self.number);
            self.stile.skip_abandoned();
        }
    }
}

impl Turnstile {
    pub async fn enter(&self) -> Turn<'_> {
        let number = self.next.get();
        self.next.set(number + 1);
        let mut ticket = Ticket {
            stile: self,
            number,
            served: false,
        };
        poll_fn(|cx| {
            if self.serving.get() == number {
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        ticket.served = true;
        Turn { stile: self }
    }

    /// Whether work is under way or waiting.
    pub fn is_busy(&self) -> bool {
        self.serving.get() != self.next.get()
    }

    fn advance(&self) {
        self.serving.set(self.serving.get() + 1);
        self.skip_abandoned();
        for waker in std::mem::take(&mut *self.waiters.borrow_mut()) {
            waker.wake();
        }
    }

    fn skip_abandoned(&self) {
        let mut abandoned = self.abandoned.borrow_mut();
        while abandoned.remove(&self.serving.get()) {
            self.serving.set(self.serving.get() + 1);
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.stile.advance();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::rc::Rc;

    #[test]
    fn turns_come_in_order_and_a_dropped_waiter_gives_its_place_up() {
        let stile = Rc::new(Turnstile::default());
        let log = Rc::new(RefCell::new(Vec::new()));
        let first = pollster::block_on(stile.enter());
        let mut second = Box::pin({
            let (stile, log) = (stile.clone(), log.clone());
            async move {
                let _turn = stile.enter().await;
                log.borrow_mut().push(2);
            }
        });
        let abandoned = Box::pin({
            let stile = stile.clone();
            async move {
                let _turn = stile.enter().await;
            }
        });
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(second.as_mut().poll(&mut cx).is_pending());
        let mut abandoned = abandoned;
        assert!(abandoned.as_mut().poll(&mut cx).is_pending());
        drop(abandoned);
        drop(first);
        assert!(second.as_mut().poll(&mut cx).is_ready());
        assert_eq!(*log.borrow(), vec![2]);
        assert!(!stile.is_busy());
        pollster::block_on(stile.enter());
    }
}
