//! The writer's hot path: the runs of one-slot method records that make up nearly every
//! batch, written in one loop ([`Resolver::common_run`]); everything else goes record by
//! record (`calls.rs`, `ids.rs`, `details.rs`).

use super::*;

impl<S: Sink> Resolver<S> {
    /// Writes the leading records of `slots` that are the common case, and returns how many
    /// it wrote: one-slot entries of a method already resolved (dense key, traced) without a
    /// receiver, and one-slot exits of the top frame, on a thread that has its ID. They are
    /// what a batch is made of; each costs here a table lookup, a frame push or pop and the
    /// sink's bytes. [`Resolver::record`] writes the same events for them, and handles
    /// everything else.
    pub(super) fn common_run(&mut self, slots: &[Slot], overhead: u32) -> io::Result<usize> {
        match self.config.stck {
            None => self.common_run_in::<false>(slots, overhead),
            Some(_) => self.common_run_in::<true>(slots, overhead),
        }
    }

    /// [`Resolver::common_run`], `STCK` saying whether ticks and overheads are mapped to
    /// STORE CLOCK values.
    #[inline(always)]
    pub(super) fn common_run_in<const STCK: bool>(
        &mut self,
        slots: &[Slot],
        overhead: u32,
    ) -> io::Result<usize> {
        let state = &mut self.current.1;
        let Some(thread) = state.id else {
            return Ok(0);
        };
        if self.config.entries_only {
            return Ok(0);
        }
        let stck = self.config.stck.unwrap_or(Stck::new(0, 0, 1_000_000));
        let mut last_ticks = self.last_ticks;
        // Kept in registers for the run, and stored once at its end: stored and loaded again
        // per call, a narrow store followed by a wide load of the pair stalled each entry.
        let (mut depth, mut tickets) = (state.depth, state.tickets);
        let mut leaves = 0;
        let mut n = 0;
        let mut result = Ok(());
        for s in slots {
            let key = MethodKey::from(s.key());
            let ticks = if STCK { stck.of(s.ticks) } else { s.ticks };
            match s.form() {
                FORM_ENTRY if s.arg == NO_OBJECT => {
                    let Some(&resolved) = self.dense.get(key as usize) else {
                        break;
                    };
                    let Some(method) = resolved.method() else {
                        break;
                    };
                    depth += 1;
                    tickets = tickets.wrapping_add(1);
                    state.frames.push(Frame {
                        key,
                        method: resolved,
                        overhead,
                        ticket: tickets,
                    });
                    result = self.sink.enter(Enter {
                        ticks,
                        thread,
                        method,
                        object: model::NO_OBJECT,
                        depth,
                        ticket: tickets,
                    });
                }
                form @ (FORM_EXIT | FORM_BARE_EXIT) => {
                    match state.frames.last() {
                        Some(top) if top.key == key => {}
                        _ => break,
                    }
                    if let Some(frame) = state.frames.pop() {
                        if let Some(method) = frame.method.method() {
                            let own = if form == FORM_EXIT { overhead } else { 0 };
                            leaves += u64::from(own == 0); // Record::is_bare_exit
                            let spent = u64::from(frame.overhead) + u64::from(own);
                            result = self.sink.leave(Leave {
                                ticks,
                                thread,
                                method,
                                depth,
                                ticket: frame.ticket,
                                overhead: if STCK { stck.span(spent) } else { spent },
                            });
                            depth -= 1;
                        }
                    }
                }
                _ => break,
            }
            last_ticks = last_ticks.max(ticks);
            n += 1;
            if result.is_err() {
                break;
            }
        }
        (state.depth, state.tickets) = (depth, tickets);
        self.last_ticks = last_ticks;
        self.counts.leaf_calls += leaves;
        result.map(|()| n)
    }
}
