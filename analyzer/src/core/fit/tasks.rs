//! A small pool for work that makes more work: the fit's tasks (a detector's first fit makes
//! its trimmed fit and its out-of-sample folds) run on a few threads, the most urgent first.

use std::sync::{Condvar, Mutex, MutexGuard};

struct Queue<T> {
    ready: Vec<T>,
    /// Tasks taken and not finished: while any runs, an idle thread waits for what it makes.
    running: usize,
    /// A task panicked: the others stop taking work, and the panic reaches the caller.
    failed: bool,
}

struct Shared<T> {
    queue: Mutex<Queue<T>>,
    changed: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Queue<T>> {
        // Tasks run outside the lock, so it is never held by a panicking task.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Ends a task's turn: its follow-ups join the queue; a task that panicked (no follow-ups
/// given) stops the pool rather than leaving the other threads waiting for it.
struct Turn<'a, T> {
    shared: &'a Shared<T>,
    made: Option<Vec<T>>,
}

impl<T> Drop for Turn<'_, T> {
    fn drop(&mut self) {
        let mut q = self.shared.lock();
        q.running -= 1;
        match self.made.take() {
            Some(made) => q.ready.extend(made),
            None => q.failed = true,
        }
        drop(q);
        self.shared.changed.notify_all();
    }
}

/// Runs every task of `roots`, and every task a task returns, on up to `threads` threads
/// (the calling thread is one of them). Of the tasks ready, the one of lowest `rank` runs
/// first. A panic in a task is raised again here once the other threads have stopped.
pub fn run<T: Send>(
    threads: usize,
    roots: Vec<T>,
    rank: impl Fn(&T) -> usize + Sync,
    work: impl Fn(T) -> Vec<T> + Sync,
) {
    let shared = Shared {
        queue: Mutex::new(Queue {
            ready: roots,
            running: 0,
            failed: false,
        }),
        changed: Condvar::new(),
    };
    let worker = || loop {
        let task = {
            let mut q = shared.lock();
            loop {
                if q.failed {
                    return;
                }
                if let Some(i) = (0..q.ready.len()).min_by_key(|&i| rank(&q.ready[i])) {
                    q.running += 1;
                    break q.ready.swap_remove(i);
                }
                if q.running == 0 {
                    return;
                }
                q = shared.changed.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        let mut turn = Turn {
            shared: &shared,
            made: None,
        };
        turn.made = Some(work(task));
    };
    std::thread::scope(|s| {
        for _ in 1..threads.max(1) {
            s.spawn(worker);
        }
        worker();
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_task_and_every_follow_up_runs_once() {
        // Task n makes tasks 2n+1 and 2n+2 below 100: a tree of 100 tasks from one root.
        for threads in [1, 2, 5] {
            let seen: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
            run(
                threads,
                vec![0usize],
                |&t| t,
                |t| {
                    seen[t].fetch_add(1, Ordering::SeqCst);
                    [2 * t + 1, 2 * t + 2]
                        .into_iter()
                        .filter(|&c| c < 100)
                        .collect()
                },
            );
            assert!(
                seen.iter().all(|n| n.load(Ordering::SeqCst) == 1),
                "{threads}"
            );
        }
    }

    #[test]
    fn the_lowest_rank_ready_runs_first() {
        let order = Mutex::new(Vec::new());
        run(
            1,
            vec![5usize, 1, 3],
            |&t| t,
            |t| {
                order.lock().unwrap().push(t);
                if t == 1 {
                    vec![2]
                } else {
                    vec![]
                }
            },
        );
        assert_eq!(*order.lock().unwrap(), [1, 2, 3, 5]);
    }

    #[test]
    fn a_panicking_task_reaches_the_caller_and_leaves_no_thread_waiting() {
        let r = std::panic::catch_unwind(|| {
            run(
                3,
                vec![0usize, 1, 2, 3],
                |&t| t,
                |t| {
                    if t == 1 {
                        panic!("task 1 fails");
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    vec![]
                },
            )
        });
        assert!(r.is_err());
    }
}
