fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fa = falcon_analysis::input::find_profiles(std::path::Path::new(&args[1]), None).unwrap();
    let fb = falcon_analysis::input::find_profiles(std::path::Path::new(&args[2]), None).unwrap();
    let c = falcon_analysis::compare::compare_files((&args[1], &fa), (&args[2], &fb), &Default::default()).unwrap();
    println!("{}", serde_json::to_string_pretty(&c).unwrap());
}
