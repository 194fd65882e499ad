//! JVMPI raw monitors: reentrant monitors with wait and notifyAll, kept by the shim itself
//! (not JVMTI's) so that contention is seen: an enter that finds the monitor taken is a
//! RAW_MONITOR_CONTENDED_ENTER, and the exit of a monitor others wait for a
//! RAW_MONITOR_CONTENDED_EXIT. A name that starts with `_` is never reported (the
//! specification's rule).

use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::ffi::CString;
use std::time::Duration;

pub struct RawMonitor {
    pub name: CString,
    state: Mutex<State>,
    /// Signalled when the monitor is released.
    free: Condvar,
    /// Signalled by notifyAll.
    notified: Condvar,
}

#[derive(Default)]
struct State {
    owner: usize,
    /// The owner's JNIEnv (0: a thread not attached to the JVM).
    owner_env: usize,
    count: u32,
    /// Threads blocked in enter, and in wait, by JNIEnv.
    entering: Vec<usize>,
    waiting: Vec<usize>,
    /// Bumped by each notifyAll.
    epoch: u64,
}

/// A raw monitor's state for the monitor dump.
pub struct Usage {
    pub owner_env: usize,
    pub count: u32,
    pub entering: Vec<usize>,
    pub waiting: Vec<usize>,
}

fn remove_one(v: &mut Vec<usize>, x: usize) {
    if let Some(i) = v.iter().position(|&e| e == x) {
        v.swap_remove(i);
    }
}

thread_local! {
    static TOKEN: Cell<u8> = const { Cell::new(0) };
}

/// A number unique to the calling thread while it lives.
fn me() -> usize {
    TOKEN.with(|t| t as *const Cell<u8> as usize)
}

/// The calling thread's token (as raw monitors know their owners).
pub fn thread_token() -> usize {
    me()
}

impl RawMonitor {
    pub fn new(name: CString) -> RawMonitor {
        RawMonitor {
            name,
            state: Mutex::new(State::default()),
            free: Condvar::new(),
            notified: Condvar::new(),
        }
    }

    /// Whether its contention is reported.
    pub fn reported(&self) -> bool {
        self.name.as_bytes().first() != Some(&b'_')
    }

    /// Enters for the thread of JNIEnv `env`; `contended` runs (outside the lock) before
    /// blocking on a monitor another thread holds, and again once it is entered.
    pub fn enter(&self, env: usize, contended: &dyn Fn(bool)) {
        let me = me();
        let mut s = self.state.lock();
        if s.owner == me {
            s.count += 1;
            return;
        }
        if s.owner == 0 {
            s.owner = me;
            s.owner_env = env;
            s.count = 1;
            return;
        }
        s.entering.push(env);
        drop(s);
        contended(true);
        let mut s = self.state.lock();
        while s.owner != 0 {
            self.free.wait(&mut s);
        }
        remove_one(&mut s.entering, env);
        s.owner = me;
        s.owner_env = env;
        s.count = 1;
        drop(s);
        contended(false);
    }

    /// Exits; true if other threads wait to enter (a contended exit). False also when the
    /// caller does not own it (then nothing changes).
    pub fn exit(&self) -> bool {
        let mut s = self.state.lock();
        if s.owner != me() {
            return false;
        }
        s.count -= 1;
        if s.count > 0 {
            return false;
        }
        s.owner = 0;
        s.owner_env = 0;
        let waiting = !s.entering.is_empty();
        self.free.notify_one();
        waiting
    }

    /// Waits for a notifyAll or `ms` milliseconds (0: forever), releasing the monitor meanwhile.
    /// False (and no wait) when the caller does not own it.
    pub fn wait(&self, ms: i64) -> bool {
        let me = me();
        let mut s = self.state.lock();
        if s.owner != me {
            return false;
        }
        let count = s.count;
        let epoch = s.epoch;
        let env = s.owner_env;
        s.owner = 0;
        s.owner_env = 0;
        s.count = 0;
        s.waiting.push(env);
        self.free.notify_one();
        if ms > 0 {
            let deadline = std::time::Instant::now() + Duration::from_millis(ms as u64);
            while s.epoch == epoch {
                if self.notified.wait_until(&mut s, deadline).timed_out() {
                    break;
                }
            }
        } else {
            while s.epoch == epoch {
                self.notified.wait(&mut s);
            }
        }
        remove_one(&mut s.waiting, env);
        s.entering.push(env);
        while s.owner != 0 {
            self.free.wait(&mut s);
        }
        remove_one(&mut s.entering, env);
        s.owner = me;
        s.owner_env = env;
        s.count = count;
        true
    }

    pub fn notify_all(&self) {
        let mut s = self.state.lock();
        s.epoch += 1;
        self.notified.notify_all();
    }

    pub fn usage(&self) -> Usage {
        let s = self.state.lock();
        Usage {
            owner_env: s.owner_env,
            count: s.count,
            entering: s.entering.clone(),
            waiting: s.waiting.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn an_owner_reenters_and_a_second_thread_is_told_of_contention() {
        let m = Arc::new(RawMonitor::new(CString::new("lock").unwrap()));
        let seen = Arc::new(AtomicU32::new(0));
        m.enter(1, &|_| panic!("not contended"));
        m.enter(1, &|_| panic!("not contended"));
        let (m2, seen2) = (m.clone(), seen.clone());
        let t = std::thread::spawn(move || {
            m2.enter(2, &|_| {
                seen2.fetch_add(1, Ordering::SeqCst);
            });
            assert!(!m2.exit());
        });
        while seen.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        assert!(!m.exit(), "still held once");
        while !m.exit_was_contended_after_entering_wait() {
            std::thread::yield_now();
        }
        t.join().unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 2);
    }

    impl RawMonitor {
        /// Test helper: once the other thread blocks, the last exit is contended.
        fn exit_was_contended_after_entering_wait(&self) -> bool {
            if self.usage().entering.is_empty() {
                return false;
            }
            self.exit()
        }
    }

    #[test]
    fn wait_releases_the_monitor_and_notify_all_wakes_it() {
        let m = Arc::new(RawMonitor::new(CString::new("_quiet").unwrap()));
        assert!(!m.reported());
        assert!(!m.wait(1), "not owned: no wait");
        m.enter(1, &|_| {});
        assert!(m.wait(5), "times out");
        let m2 = m.clone();
        let t = std::thread::spawn(move || {
            m2.enter(2, &|_| {});
            assert_eq!(m2.usage().waiting, vec![1]);
            m2.notify_all();
            m2.exit();
        });
        assert!(m.wait(0));
        assert_eq!((m.usage().count, m.usage().owner_env), (1, 1));
        m.exit();
        t.join().unwrap();
    }
}
