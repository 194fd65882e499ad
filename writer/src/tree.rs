//! What `jlive tree` prints: each thread's calling-context tree ([`crate::calltree`]) of a
//! file, with calls, inclusive and self time, and the share of the thread's traced time; and
//! the same trees as collapsed stacks for flame graphs.

pub use crate::calltree::{Node, ThreadTree, Trees, TreesByThread};
use crate::model::ThreadId;
use crate::read::{DecodeError, Trace};
use std::fmt::Write as _;

impl Trees {
    /// The trees of a file of any format, and the names they need (decoded one event at a
    /// time; where the file was cut in [`Trace::cut_at`]).
    pub fn of_reader(reader: impl std::io::Read) -> Result<(Trees, Trace), DecodeError> {
        let mut trees = Trees::default();
        let names = Trace::scan(reader, |_, _, e| -> Result<(), DecodeError> {
            trees.add(&e);
            Ok(())
        })?;
        trees.close(0);
        Ok((trees, names))
    }

    /// The report: threads by traced time (only `thread` if given), each context whose
    /// inclusive time is at least `min_percent` of its thread's, callees under their callers
    /// by inclusive time.
    pub fn report(&self, names: &Trace, min_percent: f64, thread: Option<&str>) -> String {
        let mut out = String::new();
        let tpu = f64::from(names.info.ticks_per_microsecond.max(1));
        let ms = |ticks: u64| ticks as f64 / tpu / 1000.0;
        let mut threads: Vec<(&ThreadId, &ThreadTree)> = self
            .threads
            .iter()
            .filter(|(id, _)| thread.is_none_or(|n| names.thread_name(**id) == n))
            .filter(|(_, t)| t.nodes.len() > 1)
            .collect();
        threads.sort_by(|a, b| b.1.total_ticks().cmp(&a.1.total_ticks()).then(a.0.cmp(b.0)));
        let mut left_out = 0u64;
        for (id, tree) in threads {
            let total = tree.total_ticks();
            let calls: u64 = tree.nodes.iter().map(|n| n.calls).sum();
            let _ = writeln!(
                out,
                "thread {} {}: {:.3} ms traced, {} calls",
                id,
                names.thread_name(*id),
                ms(total),
                calls
            );
            let _ = writeln!(
                out,
                "  {:>6}  {:>12}  {:>12}  {:>10}  method",
                "total", "incl ms", "self ms", "calls"
            );
            let share = |ticks: u64| {
                if total == 0 {
                    100.0
                } else {
                    ticks as f64 * 100.0 / total as f64
                }
            };
            // Depth first, without recursion (a StackOverflowError's trace is thousands deep).
            let mut todo: Vec<(usize, usize)> = Vec::new();
            let push_children = |todo: &mut Vec<(usize, usize)>, node: usize, depth: usize| {
                let mut kids = tree.nodes[node].children.clone();
                kids.sort_by(|&a, &b| {
                    let (a, b) = (&tree.nodes[a], &tree.nodes[b]);
                    a.inclusive_ticks.cmp(&b.inclusive_ticks)
                });
                todo.extend(kids.into_iter().map(|k| (k, depth)));
            };
            push_children(&mut todo, 0, 0);
            while let Some((node, depth)) = todo.pop() {
                let n = &tree.nodes[node];
                if share(n.inclusive_ticks) < min_percent {
                    left_out += 1;
                    continue;
                }
                let name = n.method.map_or_else(String::new, |m| names.method_label(m));
                let _ = writeln!(
                    out,
                    "  {:>5.1}%  {:>12.3}  {:>12.3}  {:>10}  {:indent$}{}",
                    share(n.inclusive_ticks),
                    ms(n.inclusive_ticks),
                    ms(tree.self_ticks(node)),
                    n.calls,
                    "",
                    name,
                    indent = depth * 2
                );
                push_children(&mut todo, node, depth + 1);
            }
            out.push('\n');
        }
        if left_out > 0 {
            let _ = writeln!(
                out,
                "({} calling contexts under {}% of their thread's time left out: --min 0 shows all)",
                left_out, min_percent
            );
        }
        out
    }
}

/// What a folded stack is weighed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Self time in nanoseconds.
    SelfTime,
    /// Calls.
    Calls,
}

impl Trees {
    /// Folded stacks (flame graph tools' "collapsed" input): a line per calling context,
    /// `thread;caller;...;method WEIGHT`, the thread's name first; a `;` inside a name (a
    /// signature's) is written `,`. Contexts of zero weight are left out, and those whose
    /// inclusive time is under `min_percent` of their thread's, with what they called.
    pub fn collapsed(
        &self,
        names: &Trace,
        weight: Weight,
        min_percent: f64,
        out: &mut impl std::io::Write,
    ) -> std::io::Result<()> {
        let tpu = u128::from(names.info.ticks_per_microsecond.max(1));
        let mut ids: Vec<&ThreadId> = self.threads.keys().collect();
        ids.sort();
        for id in ids {
            let tree = &self.threads[id];
            let thread = names.thread_name(*id).replace([';', ' ', '\n'], "_");
            // (node, the path up to it)
            let mut todo: Vec<(usize, String)> = tree.nodes[0]
                .children
                .iter()
                .rev()
                .map(|&c| (c, thread.clone()))
                .collect();
            let least = tree.total_ticks() as f64 * min_percent / 100.0;
            while let Some((node, above)) = todo.pop() {
                let n = &tree.nodes[node];
                if min_percent > 0.0 && (n.inclusive_ticks as f64) < least {
                    continue;
                }
                let name = n.method.map_or_else(String::new, |m| names.method_label(m));
                let path = format!("{};{}", above, name.replace(';', ","));
                let w = match weight {
                    Weight::Calls => u128::from(n.calls),
                    Weight::SelfTime => u128::from(tree.self_ticks(node)) * 1000 / tpu,
                };
                if w > 0 {
                    writeln!(out, "{} {}", path, w)?;
                }
                todo.extend(n.children.iter().rev().map(|&c| (c, path.clone())));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Enter, Event, Leave, MethodId};

    fn m(index: u16) -> MethodId {
        MethodId { class: 2, index }
    }

    fn enter(ticks: u64, method: MethodId) -> Event {
        Event::MethodEnter(Enter {
            ticks,
            thread: 1,
            method,
            object: crate::model::NO_OBJECT,
            depth: 0,
            ticket: 0,
        })
    }

    fn leave(ticks: u64, method: MethodId) -> Event {
        Event::MethodLeave(Leave {
            ticks,
            thread: 1,
            method,
            depth: 0,
            ticket: 0,
            overhead: 0,
        })
    }

    /// main calls a twice (a calls b once each time) and b once: b has two contexts.
    #[test]
    fn each_calling_context_is_a_node_with_its_calls_and_times() {
        let mut trees = Trees::default();
        let (main, a, b) = (m(0), m(1), m(2));
        for e in [
            enter(0, main),
            enter(10, a),
            enter(12, b),
            leave(15, b),
            leave(20, a),
            enter(30, a),
            enter(31, b),
            leave(33, b),
            leave(40, a),
            enter(50, b),
            leave(60, b),
            enter(70, a), // still open at the burst's end
            Event::BurstEnd {
                ticks: 100,
                burst: 1,
            },
        ] {
            trees.add(&e);
        }
        let t = &trees.threads[&1];
        let find = |path: &[MethodId]| {
            let mut node = 0;
            for &method in path {
                node = *t.nodes[node]
                    .children
                    .iter()
                    .find(|&&c| t.nodes[c].method == Some(method))
                    .expect("a node on the path");
            }
            node
        };
        let main_node = find(&[main]);
        assert_eq!(t.nodes[main_node].calls, 1);
        assert_eq!(t.nodes[main_node].inclusive_ticks, 100);
        let ab = find(&[main, a, b]);
        assert_eq!((t.nodes[ab].calls, t.nodes[ab].inclusive_ticks), (2, 5));
        let a_node = find(&[main, a]);
        assert_eq!(
            (t.nodes[a_node].calls, t.nodes[a_node].inclusive_ticks),
            (3, 50)
        );
        assert_eq!(t.self_ticks(a_node), 45);
        let mb = find(&[main, b]);
        assert_eq!((t.nodes[mb].calls, t.nodes[mb].inclusive_ticks), (1, 10));
        assert_eq!(t.self_ticks(main_node), 100 - 50 - 10);
        assert_eq!(t.total_ticks(), 100);
        assert_eq!(t.nodes.len(), 5, "root, main, main>a, main>a>b, main>b");
    }
}
