#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// Told of events of type `E` as they happen, in order, from the task
/// doing the work.
pub trait Observer<E: ?Sized>: Send + Sync {
    /// One event.
    fn event(&self, event: &E);
}

impl<E: ?Sized, F> Observer<E> for F
where
    F: Fn(&E) + Send + Sync,
{
    fn event(&self, event: &E) {
        self(event)
    }
}

/// The observers a library reports to, each told every event in the
/// order they were added.
pub struct Observers<E: ?Sized> {
    list: Vec<Arc<dyn Observer<E>>>,
}

impl<E: ?Sized> Observers<E> {
    /// None yet.
    pub fn new() -> Self {
        Observers { list: Vec::new() }
    }

    /// Adds one.
    pub fn push(&mut self, observer: Arc<dyn Observer<E>>) {
        self.list.push(observer);
    }

    /// Tells every observer.
    pub fn emit(&self, event: &E) {
        for o in &self.list {
            o.event(event);
        }
    }

    /// Whether nobody listens (a library can skip building an event).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }
}

impl<E: ?Sized> Default for Observers<E> {
    fn default() -> Self {
        Observers::new()
    }
}

impl<E: ?Sized> Clone for Observers<E> {
    fn clone(&self) -> Self {
        Observers {
            list: self.list.clone(),
        }
    }
}

impl<E: ?Sized> fmt::Debug for Observers<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Observers({})", self.list.len())
    }
}

impl<E: ?Sized> Observer<E> for Observers<E> {
    fn event(&self, event: &E) {
        self.emit(event);
    }
}

/// Keeps a copy of every event it is told.
pub struct Recorder<E> {
    events: Mutex<Vec<E>>,
}

impl<E: Clone> Recorder<E> {
    /// Empty.
    pub fn new() -> Self {
        Recorder {
            events: Mutex::new(Vec::new()),
        }
    }

    /// Every event so far, oldest first.
    pub fn events(&self) -> Vec<E> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Takes the events so far, leaving none.
    pub fn take(&self) -> Vec<E> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<E: Clone> Default for Recorder<E> {
    fn default() -> Self {
        Recorder::new()
    }
}

impl<E> fmt::Debug for Recorder<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        write!(f, "Recorder({n} events)")
    }
}

impl<E: Clone + Send> Observer<E> for Recorder<E> {
    fn event(&self, event: &E) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_observer_hears_every_event_in_order() {
        let first = Arc::new(Recorder::new());
        let second = Arc::new(Recorder::new());
        let mut all = Observers::new();
        all.push(first.clone());
        all.push(second.clone());
        for n in 0..3 {
            all.emit(&n);
        }
        assert_eq!(first.events(), [0, 1, 2]);
        assert_eq!(second.take(), [0, 1, 2]);
        assert!(second.events().is_empty());
        assert_eq!(all.len(), 2);
    }

    #[test]
    fn a_closure_is_an_observer_and_observers_nest() {
        let seen = Arc::new(Mutex::new(String::new()));
        let sink = seen.clone();
        let mut inner: Observers<str> = Observers::new();
        inner.push(Arc::new(move |e: &str| sink.lock().unwrap().push_str(e)));
        let mut outer: Observers<str> = Observers::new();
        outer.push(Arc::new(inner));
        outer.emit("a");
        outer.emit("b");
        assert_eq!(*seen.lock().unwrap(), "ab");
    }
}
