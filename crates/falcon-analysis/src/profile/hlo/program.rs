//! One decoded program as a graph: its computations by id, each computation's instructions by id and by
//! name, operands and users resolved, post orders — what the cost model and the kernel attribution walk.
//! Ids in an `HloProto` are unique within a computation (operands never leave it), so every lookup is scoped
//! by the computation; names are unique within the module.

use std::collections::HashMap;

use super::proto::{HloComputationProto, HloInstructionProto, HloModuleProto};

/// An instruction with the computation it lives in.
#[derive(Clone, Copy)]
pub(crate) struct Instr<'m> {
    pub(crate) proto: &'m HloInstructionProto,
    pub(crate) computation: &'m HloComputationProto,
}

impl<'m> Instr<'m> {
    pub(crate) fn opcode(&self) -> &'m str {
        &self.proto.opcode
    }

    pub(crate) fn name(&self) -> &'m str {
        &self.proto.name
    }
}

/// A program (one `HloModuleProto`) and its id on the capture.
pub(crate) struct Program<'m> {
    pub(crate) module: &'m HloModuleProto,
    computations: HashMap<i64, &'m HloComputationProto>,
    /// (computation id, instruction id) → instruction.
    by_id: HashMap<(i64, i64), &'m HloInstructionProto>,
    by_name: HashMap<&'m str, Instr<'m>>,
}

impl<'m> Program<'m> {
    pub(crate) fn new(module: &'m HloModuleProto) -> Program<'m> {
        let mut computations = HashMap::new();
        let mut by_id = HashMap::new();
        let mut by_name = HashMap::new();
        for c in &module.computations {
            computations.insert(c.id, c);
            for i in &c.instructions {
                by_id.insert((c.id, i.id), i);
                by_name.entry(i.name.as_str()).or_insert(Instr { proto: i, computation: c });
            }
        }
        Program { module, computations, by_id, by_name }
    }

    /// The instruction named `name`.
    pub(crate) fn instruction(&self, name: &str) -> Option<Instr<'m>> {
        self.by_name.get(name).copied()
    }

    pub(crate) fn computation(&self, id: i64) -> Option<&'m HloComputationProto> {
        self.computations.get(&id).copied()
    }

    /// The computation `instr` calls at position `i` of its called computations (a fusion's fused
    /// computation, a reduce's reducer, a call's callee).
    pub(crate) fn called(&self, instr: &Instr<'m>, i: usize) -> Option<&'m HloComputationProto> {
        self.computation(*instr.proto.called_computation_ids.get(i)?)
    }

    /// Operand `i` of `instr`.
    pub(crate) fn operand(&self, instr: &Instr<'m>, i: usize) -> Option<Instr<'m>> {
        let id = *instr.proto.operand_ids.get(i)?;
        let proto = *self.by_id.get(&(instr.computation.id, id))?;
        Some(Instr { proto, computation: instr.computation })
    }

    /// The operands of `instr`, in order (`None` for one the proto does not resolve).
    pub(crate) fn operands(&self, instr: &Instr<'m>) -> Vec<Option<Instr<'m>>> {
        (0..instr.proto.operand_ids.len()).map(|i| self.operand(instr, i)).collect()
    }

    /// The root of a computation: its `root_id`, else its last instruction.
    pub(crate) fn root(&self, c: &'m HloComputationProto) -> Option<Instr<'m>> {
        let proto = self.by_id.get(&(c.id, c.root_id)).copied().or_else(|| c.instructions.last())?;
        Some(Instr { proto, computation: c })
    }

    /// The instructions of `c` with operands before their users (XLA `MakeInstructionPostOrder`): a
    /// depth-first walk from the root, then the instructions it did not reach in their stored order.
    pub(crate) fn post_order(&self, c: &'m HloComputationProto) -> Vec<Instr<'m>> {
        let mut order = Vec::with_capacity(c.instructions.len());
        let mut state: HashMap<i64, bool> = HashMap::with_capacity(c.instructions.len());
        let mut starts: Vec<i64> = self.root(c).map(|r| r.proto.id).into_iter().collect();
        starts.extend(c.instructions.iter().map(|i| i.id));
        for start in starts {
            if state.contains_key(&start) {
                continue;
            }
            // (id, operands pushed)
            let mut stack = vec![(start, false)];
            while let Some((id, expanded)) = stack.pop() {
                let Some(&proto) = self.by_id.get(&(c.id, id)) else { continue };
                if expanded {
                    if state.insert(id, true) != Some(true) {
                        order.push(Instr { proto, computation: c });
                    }
                    continue;
                }
                if state.contains_key(&id) {
                    continue;
                }
                state.insert(id, false);
                stack.push((id, true));
                for op in proto.operand_ids.iter().rev() {
                    if !state.contains_key(op) {
                        stack.push((*op, false));
                    }
                }
            }
        }
        order
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::proto::*;
    use super::*;

    pub(crate) fn instr(id: i64, name: &str, opcode: &str, operands: &[i64]) -> HloInstructionProto {
        HloInstructionProto {
            id,
            name: name.into(),
            opcode: opcode.into(),
            operand_ids: operands.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn post_order_puts_operands_first_and_keeps_unreached_ones() {
        let c = HloComputationProto {
            name: "c".into(),
            id: 1,
            root_id: 4,
            instructions: vec![
                instr(4, "root", "add", &[2, 3]),
                instr(2, "a", "negate", &[1]),
                instr(3, "b", "exponential", &[1]),
                instr(1, "p", "parameter", &[]),
                instr(9, "dead", "constant", &[]),
                instr(7, "cycle", "add", &[7, 99]),
            ],
        };
        let module = HloModuleProto { name: "m".into(), computations: vec![c], ..Default::default() };
        let p = Program::new(&module);
        let c = p.computation(1).unwrap();
        let order: Vec<&str> = p.post_order(c).iter().map(|i| i.name()).collect();
        assert_eq!(order, ["p", "a", "b", "root", "dead", "cycle"]);
        assert_eq!(p.root(c).unwrap().name(), "root");
        let root = p.instruction("root").unwrap();
        assert_eq!(p.operands(&root).iter().map(|o| o.unwrap().name()).collect::<Vec<_>>(), ["a", "b"]);
        assert!(p.operand(&p.instruction("cycle").unwrap(), 1).is_none(), "an operand id that is not there");
    }
}
