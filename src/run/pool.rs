//! The worker pool of every pass over many files (`run`, `list`, `sweep`): workers take the
//! files one at a time, in order, while the calling thread hands each result on in file order
//! as soon as it and those before it are done. Nobody waits at chunk boundaries, and the
//! hand-on (reports, CSV rows, folds) runs beside the work instead of between its chunks.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError, mpsc};
use std::time::Duration;

/// Results a worker sends together.
const BATCH: usize = 16;

/// A pool of `jobs` worker threads (at least one).
pub fn build(jobs: usize) -> std::io::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(std::io::Error::other)
}

/// `work` on every item on the pool's threads, and `sink` on each result, in item order, on
/// the calling thread. A worker starts an item at most `window` places after the oldest one
/// not yet handed on: results done early wait for it, so `window` bounds how many are held,
/// whatever one slow item costs. The first error of `sink` stops the pass: no further item starts, and
/// that error is returned once the items in flight are done. The items are taken from their
/// iterator one at a time, as workers come for them.
#[expect(
    clippy::disallowed_methods,
    reason = "the runner's pool owns its threads (an edge: run)"
)]
pub fn for_each_ordered<I, R, E>(
    pool: &rayon::ThreadPool,
    window: usize,
    items: I,
    work: impl Fn(I::Item) -> R + Sync,
    mut sink: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E>
where
    I: IntoIterator,
    I::IntoIter: Send,
    I::Item: Send,
    R: Send,
{
    let source = Mutex::new(items.into_iter().enumerate());
    let handed_on = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Vec<(usize, R)>>();
    pool.in_place_scope(|scope| {
        for _ in 0..pool.current_num_threads() {
            let tx = tx.clone();
            let (source, handed_on, stop, work) = (&source, &handed_on, &stop, &work);
            let window = window.max(1);
            scope.spawn(move |_| {
                // Results go to the calling thread a few at a time: one wake-up a batch, not
                // one a file. A worker about to wait for the window sends what it holds first,
                // since the oldest result may be among it.
                let mut batch = Vec::with_capacity(BATCH);
                loop {
                    let next = source.lock().unwrap_or_else(PoisonError::into_inner).next();
                    let Some((i, item)) = next else {
                        break;
                    };
                    if i >= handed_on.load(Ordering::Acquire) + window {
                        if !batch.is_empty() && tx.send(std::mem::take(&mut batch)).is_err() {
                            return;
                        }
                        while i >= handed_on.load(Ordering::Acquire) + window
                            && !stop.load(Ordering::Relaxed)
                        {
                            std::thread::sleep(Duration::from_micros(200));
                        }
                    }
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    batch.push((i, work(item)));
                    if batch.len() >= BATCH && tx.send(std::mem::take(&mut batch)).is_err() {
                        return;
                    }
                }
                if !batch.is_empty() {
                    let _ = tx.send(batch);
                }
            });
        }
        drop(tx);
        let mut done: BTreeMap<usize, R> = BTreeMap::new();
        let mut want = 0;
        let mut result = Ok(());
        for (i, r) in rx.into_iter().flatten() {
            done.insert(i, r);
            while let Some(r) = done.remove(&want) {
                want += 1;
                if result.is_ok() {
                    result = sink(r);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                handed_on.store(want, Ordering::Release);
            }
        }
        result
    })
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "a test sets up and reads its files, clocks and threads itself"
)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_item_order_whatever_finishes_first() {
        let pool = build(3).unwrap();
        let items: Vec<u64> = (0..2000).collect();
        let mut seen = Vec::new();
        let r: Result<(), ()> = for_each_ordered(
            &pool,
            16,
            items.iter().copied(),
            |i| {
                // Every 97th item is a slow one.
                if i % 97 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                i * 2
            },
            |r| {
                seen.push(r);
                Ok(())
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(seen, items.iter().map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_sink_error_stops_the_pass() {
        let pool = build(2).unwrap();
        let items: Vec<usize> = (0..100_000).collect();
        let started = AtomicUsize::new(0);
        let mut seen = 0;
        let r = for_each_ordered(
            &pool,
            64,
            items.iter().copied(),
            |i| {
                started.fetch_add(1, Ordering::Relaxed);
                i
            },
            |i| {
                seen += 1;
                if i == 10 { Err(i) } else { Ok(()) }
            },
        );
        assert_eq!(r, Err(10));
        assert_eq!(seen, 11);
        // Nothing past the window beyond the failing item started.
        assert!(started.load(Ordering::Relaxed) <= 11 + 64 + 2);
        // No items: nothing runs, nothing is handed on.
        let none: Result<(), ()> =
            for_each_ordered(&pool, 1, Vec::<u8>::new(), |_| (), |()| Err(()));
        assert_eq!(none, Ok(()));
    }
}
