use retro_coordinator::analysis::*;
use retro_engine::{layout::Layout, memsolve, tablebase::pack_values, kernel};
use retro_games::{cc3::Cc3, Question};

#[test]
fn scratch() {
    let g = Cc3::new(1).unwrap();
    let n = g.ranker.positions() as u64;
    let layout = Layout::new(n, 6, 64, 64);
    let qs = [Question{max_side:1,target:0}, Question{max_side:3,target:1}, Question{max_side:5,target:2}];
    let mut packed = Vec::new();
    for q in qs {
        let s = memsolve::solve(&g, q, &layout, 2).unwrap();
        println!("{:?} rounds {} {:?} init {:?}", q, s.rounds.len(), s.rounds, s.init);
        packed.push(pack_values(&kernel::tablebase_values(&s.bytes)));
    }
    let layers = Layers { packed: [packed[0].clone(), packed[1].clone(), packed[2].clone()] };
    let all = count_all(&g, &layers, 2);
    println!("all {:?}", all);
    let reach = explore(&g, Some(&layers), None);
    println!("reach {:?}", reach.reachable);
    println!("depths {:?}", reach.depths);
    println!("start {:?}", start_report(&g, &layers));
}
