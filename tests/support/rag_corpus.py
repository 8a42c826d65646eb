# ruff: noqa: E501
"""A small knowledge base for retrieval tests: pages on distinct topics, each with a question
phrased unlike the page (other words for the same thing), and the page that answers it.

Served as HTML by :func:`corpus_app`; ``TOPICS[i]`` is page ``/kb/i``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True, slots=True)
class Topic:
    title: str
    body: str
    question: str


TOPICS: tuple[Topic, ...] = (
    Topic(
        "Sourdough starter",
        "A sourdough starter is a culture of wild yeast and lactic acid bacteria kept alive in flour and water. Feed it daily and keep it at room temperature until it doubles after each feeding.",
        "how do I keep my natural leaven for bread alive",
    ),
    Topic(
        "Espresso extraction",
        "Espresso is brewed by forcing hot water through finely ground coffee at about nine bars of pressure. A shot that runs too fast tastes sour, so grind finer.",
        "my coffee shot tastes acidic and pours quickly, what should I change",
    ),
    Topic(
        "Tomato blight",
        "Late blight is a fungal-like disease that causes brown patches on tomato leaves and fruit. Remove infected plants and water the soil, not the foliage.",
        "dark spots are spreading over the leaves of my tomato plants",
    ),
    Topic(
        "Replacing a bicycle chain",
        "A bicycle chain stretches with wear and should be replaced when a chain checker shows 0.5 percent elongation. Use a chain tool to push out a pin and fit the new chain.",
        "when is it time to swap the links that drive my bike",
    ),
    Topic(
        "Car battery jump start",
        "To jump start a car, connect red to the positive terminals, black to the donor's negative and to bare metal on the dead car. Start the donor first.",
        "my vehicle will not crank, how do I borrow power from another one",
    ),
    Topic(
        "Python virtual environments",
        "A virtual environment isolates a project's packages. Create one with python -m venv .venv and activate it before installing with pip.",
        "keep dependencies of each project separate in python",
    ),
    Topic(
        "Git rebase",
        "Rebasing replays your commits on top of another branch, giving a linear history. Never rebase commits that others have already pulled.",
        "rewrite my branch history so it sits on the latest main",
    ),
    Topic(
        "Kubernetes pods",
        "A pod is the smallest deployable unit in Kubernetes: one or more containers sharing a network namespace and storage volumes.",
        "what is the basic unit that runs containers in a k8s cluster",
    ),
    Topic(
        "Photosynthesis",
        "Plants convert light energy, water and carbon dioxide into glucose and oxygen in their chloroplasts, using the green pigment chlorophyll.",
        "how do leaves turn sunlight into sugar",
    ),
    Topic(
        "Black holes",
        "A black hole is a region where gravity is so strong that nothing, not even light, can escape past the event horizon. Stellar black holes form when massive stars collapse.",
        "what happens when a huge star dies and nothing escapes its pull",
    ),
    Topic(
        "Roman aqueducts",
        "Roman engineers built aqueducts that carried water over long distances using a gentle continuous downward slope, with arches to cross valleys.",
        "how did ancient Rome bring fresh water into its cities",
    ),
    Topic(
        "The printing press",
        "Johannes Gutenberg's movable type printing press, around 1440, made books cheap and spread literacy across Europe.",
        "who made mass production of books possible in the fifteenth century",
    ),
    Topic(
        "Marathon training",
        "Marathon plans build weekly mileage slowly, with one long run each week and a taper of two to three weeks before race day.",
        "preparing to run 42 kilometres, how should I increase distance",
    ),
    Topic(
        "Chess openings",
        "The Sicilian Defence answers 1.e4 with c5, fighting for the centre asymmetrically. It is the most popular reply for black at master level.",
        "a sharp answer for the dark pieces when white pushes the king's pawn",
    ),
    Topic(
        "Knitting a scarf",
        "For a first scarf, cast on thirty stitches with chunky yarn and work garter stitch, knitting every row, until it is long enough.",
        "beginner project with two needles and wool to wrap around the neck",
    ),
    Topic(
        "Brewing beer",
        "Homebrewing steeps malted grain to extract sugars, boils the wort with hops, then ferments it with yeast for about two weeks.",
        "making ale at home from barley and hops",
    ),
    Topic(
        "Solar panels",
        "Photovoltaic panels produce direct current that an inverter turns into alternating current for the house. South-facing roofs give the best yield in the northern hemisphere.",
        "generating household electricity from the sun on my roof",
    ),
    Topic(
        "Heat pumps",
        "A heat pump moves heat from outside air or ground into a building using a refrigerant cycle, delivering three to four units of heat per unit of electricity.",
        "efficient way to warm a home by extracting warmth from cold air",
    ),
    Topic(
        "Interest rates and inflation",
        "Central banks raise interest rates to cool inflation: borrowing costs more, spending slows and prices rise less quickly.",
        "why does the central bank make loans more expensive when prices climb",
    ),
    Topic(
        "Index funds",
        "An index fund holds every stock of a market index such as the S&P 500, so its fees are low and it matches the market's return.",
        "cheap passive investing that tracks the whole stock market",
    ),
    Topic(
        "Sleep hygiene",
        "Good sleep hygiene means a regular bedtime, a dark cool room and no screens in the hour before bed.",
        "habits that help me fall asleep at night",
    ),
    Topic(
        "Hydration during exercise",
        "During long exercise, drink small amounts regularly and replace sodium lost in sweat to avoid cramps and hyponatremia.",
        "how much water and salt should I take on a long workout",
    ),
    Topic(
        "First aid for burns",
        "Cool a burn under running water for twenty minutes, remove jewellery, and cover it loosely with cling film. Do not apply butter or ice.",
        "what to do right after scalding my hand on a hot pan",
    ),
    Topic(
        "CPR",
        "Cardiopulmonary resuscitation means chest compressions at 100 to 120 per minute, five to six centimetres deep, with rescue breaths if trained.",
        "someone collapsed and is not breathing, how do I push on their chest",
    ),
    Topic(
        "Vaccines",
        "Vaccines train the immune system with a harmless piece or weakened form of a pathogen so that it responds quickly to the real infection.",
        "how does an injection teach the body to fight a disease",
    ),
    Topic(
        "Volcano eruptions",
        "Volcanoes erupt when magma rises through the crust; the gas dissolved in it expands and drives explosive eruptions.",
        "why does molten rock burst out of mountains",
    ),
    Topic(
        "Plate tectonics",
        "Earth's lithosphere is split into plates that move a few centimetres a year; where they meet, earthquakes and mountain ranges form.",
        "why do continents drift and cause quakes",
    ),
    Topic(
        "Hurricanes",
        "Hurricanes form over ocean water warmer than 26 degrees Celsius; their rotation comes from the Coriolis effect.",
        "what conditions create tropical cyclones",
    ),
    Topic(
        "Honey bees",
        "Honey bees communicate the direction of flowers with a waggle dance; the angle of the dance shows the direction relative to the sun.",
        "how do hive insects tell each other where nectar is",
    ),
    Topic(
        "Octopus intelligence",
        "Octopuses solve puzzles, open jars and use tools; most of their neurons are in their eight arms.",
        "which sea creature with tentacles is surprisingly clever",
    ),
    Topic(
        "Wolves in Yellowstone",
        "The reintroduction of wolves to Yellowstone in 1995 reduced elk overgrazing, which let willows and beavers return.",
        "effects of bringing back a top predator to the American national park",
    ),
    Topic(
        "Coral bleaching",
        "Corals expel their symbiotic algae when water is too warm and turn white; prolonged bleaching kills the reef.",
        "why are reefs losing their colour as oceans heat up",
    ),
    Topic(
        "SQL joins",
        "An inner join returns rows with matches in both tables; a left join keeps every row of the left table and fills missing matches with NULL.",
        "combine rows from two database tables keeping all from the first",
    ),
    Topic(
        "Database indexes",
        "A B-tree index lets the database find rows without scanning the whole table, at the cost of slower writes and extra disk space.",
        "make lookups in a large table faster",
    ),
    Topic(
        "HTTP caching",
        "The Cache-Control header tells browsers and proxies how long a response may be reused; ETag lets a client revalidate with a conditional request.",
        "avoid downloading the same web resource twice",
    ),
    Topic(
        "TLS certificates",
        "A TLS certificate binds a domain name to a public key and is signed by a certificate authority that browsers trust.",
        "how does the padlock in the browser prove a site is who it says",
    ),
    Topic(
        "Password hashing",
        "Store passwords with a slow salted hash such as Argon2 or bcrypt, never plain or with a fast hash like MD5.",
        "safe way to keep user login secrets in a database",
    ),
    Topic(
        "Regular expressions",
        "A regular expression describes a pattern of text: \\d matches a digit, + means one or more, and parentheses capture groups.",
        "pattern syntax to find digits in strings",
    ),
    Topic(
        "Unit testing",
        "A unit test checks one small piece of code in isolation; a failing test should point at exactly what broke.",
        "writing small automated checks for individual functions",
    ),
    Topic(
        "Docker images",
        "A Docker image is built in layers from a Dockerfile; each instruction adds a layer, and unchanged layers are reused from cache.",
        "why does rebuilding my container skip steps",
    ),
    Topic(
        "The French Revolution",
        "The French Revolution began in 1789 with the storming of the Bastille and ended the absolute monarchy of Louis XVI.",
        "when did the people of Paris overthrow their king",
    ),
    Topic(
        "The Silk Road",
        "The Silk Road was a network of trade routes linking China with the Mediterranean, carrying silk, spices and ideas.",
        "ancient trade routes between east Asia and Europe",
    ),
    Topic(
        "The Moon landing",
        "Apollo 11 landed on the Moon on 20 July 1969; Neil Armstrong and Buzz Aldrin walked on the surface while Michael Collins orbited.",
        "first humans to set foot on our natural satellite",
    ),
    Topic(
        "Impressionism",
        "Impressionist painters such as Monet and Renoir painted outdoors with visible brushstrokes to capture changing light.",
        "art movement of Monet and painting light outdoors",
    ),
    Topic(
        "Baroque music",
        "Baroque music, from about 1600 to 1750, includes Bach, Handel and Vivaldi and is known for ornamentation and basso continuo.",
        "composers of the era of Bach and Vivaldi",
    ),
    Topic(
        "Jazz improvisation",
        "Jazz musicians improvise melodies over a chord progression, often using scales and licks that fit each chord.",
        "making up solos on the spot over chord changes",
    ),
    Topic(
        "Guitar tuning",
        "Standard guitar tuning from the lowest string is E A D G B E; tune each string to the fifth fret of the one below, except G to B at the fourth.",
        "what notes should the six strings be set to",
    ),
    Topic(
        "Learning a language",
        "Spaced repetition flashcards and daily conversation practice are the most effective ways to learn vocabulary in a new language.",
        "best method to memorise words in a foreign tongue",
    ),
    Topic(
        "Public speaking",
        "To reduce stage fright, rehearse aloud, know your first minute by heart and breathe slowly before you start.",
        "calming nerves before giving a talk to an audience",
    ),
    Topic(
        "Time management",
        "The Pomodoro technique alternates 25 minutes of focused work with 5-minute breaks, with a longer break after four rounds.",
        "work in short timed bursts to stay focused",
    ),
    Topic(
        "Composting",
        "A compost heap needs a mix of green nitrogen-rich material and brown carbon-rich material, kept moist and turned for air.",
        "turning kitchen scraps and leaves into garden soil",
    ),
    Topic(
        "Pruning roses",
        "Prune roses in late winter, cutting above an outward-facing bud at an angle and removing dead or crossing stems.",
        "when and how to cut back my flowering shrubs with thorns",
    ),
    Topic(
        "Houseplant watering",
        "Most houseplants die from overwatering; water only when the top few centimetres of soil are dry and ensure the pot drains.",
        "why are my indoor plants rotting at the roots",
    ),
    Topic(
        "Keeping chickens",
        "Backyard hens need a secure coop against foxes, about four square feet each, fresh water and layer feed.",
        "raising laying hens in the garden",
    ),
    Topic(
        "Dog training",
        "Reward-based training uses treats and praise the moment the dog does the right thing; punishment makes dogs fearful.",
        "teaching my puppy to sit using positive reinforcement",
    ),
    Topic(
        "Cat nutrition",
        "Cats are obligate carnivores and need taurine from meat; a vegetarian diet makes them ill.",
        "can my feline eat a meat-free diet",
    ),
    Topic(
        "Aquarium cycling",
        "Before adding fish, cycle a new aquarium for several weeks so bacteria can convert toxic ammonia into nitrite and then nitrate.",
        "preparing a new fish tank so the water does not poison them",
    ),
    Topic(
        "Bird migration",
        "Many birds migrate thousands of kilometres, navigating by the sun, the stars and Earth's magnetic field.",
        "how do flying animals find their way south each autumn",
    ),
    Topic(
        "Tides",
        "Tides are caused mainly by the Moon's gravity pulling the oceans; spring tides occur when the Sun and Moon align.",
        "why does the sea rise and fall twice a day",
    ),
    Topic(
        "Rainbows",
        "A rainbow appears when sunlight is refracted, reflected and dispersed inside raindrops, splitting white light into colours.",
        "why do colourful arcs appear after rain",
    ),
    Topic(
        "The speed of light",
        "Light travels at about 299,792 kilometres per second in a vacuum, and nothing carrying information can go faster.",
        "how fast do photons move through empty space",
    ),
    Topic(
        "Antibiotic resistance",
        "Bacteria become resistant when antibiotics are overused; the survivors multiply and pass on resistance genes.",
        "why do some germs no longer respond to medicine",
    ),
    Topic(
        "DNA replication",
        "Before a cell divides, DNA polymerase copies each strand of the double helix, producing two identical molecules.",
        "how do cells duplicate their genetic material",
    ),
    Topic(
        "Blood types",
        "Blood types A, B, AB and O depend on antigens on red blood cells; O negative donors can give to anyone.",
        "who can donate to everyone in a transfusion",
    ),
    Topic(
        "Caffeine",
        "Caffeine blocks adenosine receptors in the brain, which reduces the feeling of tiredness for several hours.",
        "why does coffee keep me awake",
    ),
    Topic(
        "Intermittent fasting",
        "Intermittent fasting restricts eating to a window, such as eight hours a day, which some people use to reduce calorie intake.",
        "eating only during certain hours to lose weight",
    ),
    Topic(
        "Strength training",
        "Progressive overload, adding weight or repetitions over time, is the key to building muscle strength.",
        "how to keep getting stronger lifting weights",
    ),
    Topic(
        "Yoga breathing",
        "Pranayama breathing exercises in yoga, such as alternate nostril breathing, slow the breath and calm the nervous system.",
        "breath control exercises from India to relax",
    ),
    Topic(
        "Meditation",
        "Mindfulness meditation trains attention by returning focus to the breath whenever the mind wanders.",
        "practice of sitting quietly and noticing thoughts",
    ),
    Topic(
        "Budgeting",
        "The 50/30/20 rule splits income into needs, wants and savings, a simple way to plan a monthly budget.",
        "simple rule for dividing my salary each month",
    ),
    Topic(
        "Credit scores",
        "A credit score rises with on-time payments and low credit utilisation; missed payments lower it for years.",
        "how to improve my rating with lenders",
    ),
    Topic(
        "Mortgages",
        "A fixed-rate mortgage keeps the same interest for the whole term, while a variable rate follows the central bank's rate.",
        "home loan where the payment never changes",
    ),
    Topic(
        "Cryptocurrency wallets",
        "A hardware wallet keeps the private keys of your cryptocurrency offline, protecting them from malware.",
        "safest way to store bitcoin keys",
    ),
    Topic(
        "Electric cars",
        "Electric cars store energy in lithium-ion batteries; regenerative braking recovers energy when slowing down.",
        "battery vehicles that recharge while braking",
    ),
    Topic(
        "Tire pressure",
        "Check tyre pressure monthly when the tyres are cold; underinflated tyres wear faster and use more fuel.",
        "how often to check the air in my car wheels",
    ),
    Topic(
        "Changing engine oil",
        "Change engine oil every 10,000 to 15,000 kilometres or as the manual says; drain it warm and replace the filter.",
        "service interval for lubricant in the motor",
    ),
    Topic(
        "Sailing terms",
        "On a boat, port is the left side facing forward and starboard the right; the bow is the front and the stern the back.",
        "which side of a ship is left",
    ),
    Topic(
        "Knots",
        "The bowline makes a fixed loop at the end of a rope that does not slip and is easy to untie after loading.",
        "tie a loop in a line that will not slide",
    ),
    Topic(
        "Camping stoves",
        "Canister stoves burn a butane-propane mix; in freezing weather the gas vaporises poorly, so keep the canister warm.",
        "why does my gas burner struggle outdoors in the cold",
    ),
    Topic(
        "Hypothermia",
        "Hypothermia sets in when body temperature drops below 35 degrees Celsius; shivering, confusion and slurred speech are signs.",
        "signs that someone is dangerously cold",
    ),
    Topic(
        "Altitude sickness",
        "Above 2,500 metres, ascend slowly and sleep lower than your highest point each day to avoid acute mountain sickness.",
        "headache and nausea when climbing high mountains",
    ),
    Topic(
        "Stargazing",
        "For stargazing, go far from city lights, let your eyes adapt for twenty minutes and use a red torch.",
        "seeing more of the night sky",
    ),
    Topic(
        "Telescopes",
        "A refractor telescope uses lenses and a reflector uses mirrors; aperture, the diameter, decides how much light it gathers.",
        "what matters most when buying an instrument to look at planets",
    ),
    Topic(
        "Mars exploration",
        "NASA's Perseverance rover landed in Jezero Crater in 2021 to look for signs of ancient microbial life.",
        "robot searching for past life on the red planet",
    ),
    Topic(
        "The International Space Station",
        "The International Space Station orbits Earth every 90 minutes at about 400 kilometres altitude.",
        "how long does the orbiting laboratory take to circle the planet",
    ),
    Topic(
        "Origami",
        "Origami folds a single square sheet of paper into figures such as the crane without cutting or glue.",
        "Japanese paper folding of birds",
    ),
    Topic(
        "Pottery glazing",
        "Glaze is a glassy coating fired onto pottery in a kiln; bisque firing comes first to harden the clay.",
        "making a shiny coating on clay pots",
    ),
    Topic(
        "Watercolour painting",
        "Watercolour works light to dark: preserve white paper for highlights and build colour in transparent washes.",
        "technique for transparent paint and keeping highlights",
    ),
    Topic(
        "Photography exposure",
        "Exposure depends on aperture, shutter speed and ISO; a wider aperture blurs the background.",
        "how to get a blurry background in pictures",
    ),
    Topic(
        "Video compression",
        "Video codecs such as H.264 save space by storing only the changes between frames rather than every full frame.",
        "why are movie files much smaller than the raw footage",
    ),
    Topic(
        "Wi-Fi interference",
        "2.4 GHz Wi-Fi reaches farther but is crowded; 5 GHz is faster with less interference but shorter range.",
        "which wireless band to use for speed",
    ),
    Topic(
        "Mechanical keyboards",
        "Mechanical keyboards use an individual switch per key; linear switches are smooth, tactile switches have a bump.",
        "difference between key switch types for typing",
    ),
    Topic(
        "Recycling plastics",
        "Plastic resin codes 1 and 2, PET and HDPE, are the most widely recycled; many others end up in landfill.",
        "which numbered containers can actually be reprocessed",
    ),
    Topic(
        "Water filtration",
        "Activated carbon filters remove chlorine taste and some chemicals, while reverse osmosis also removes dissolved salts.",
        "making tap water taste better at home",
    ),
    Topic(
        "Wine tasting",
        "When tasting wine, look at colour, swirl to release aromas, smell, then taste for acidity, tannin and finish.",
        "steps for judging a glass of red",
    ),
    Topic(
        "Cheese making",
        "Cheese is made by curdling milk with rennet, cutting the curd, draining the whey, then pressing and ageing it.",
        "turning milk into a firm aged dairy product",
    ),
    Topic(
        "Fermented vegetables",
        "Sauerkraut is cabbage fermented in its own brine by lactic acid bacteria, kept under the liquid for weeks.",
        "preserving cabbage by souring it",
    ),
    Topic(
        "Knife sharpening",
        "Sharpen a kitchen knife on a whetstone at a constant angle of about 15 to 20 degrees, then hone it on a steel.",
        "getting a blunt chef's blade keen again",
    ),
    Topic(
        "Cast iron pans",
        "Season a cast iron pan by baking a thin layer of oil onto it; avoid soaking it, which causes rust.",
        "caring for a heavy black skillet so it does not rust",
    ),
    Topic(
        "Bread proofing",
        "Proofing lets shaped dough rise before baking; it is ready when a gentle poke springs back slowly.",
        "how to know my loaf has risen enough before the oven",
    ),
)


def page(index: int) -> str:
    topic = TOPICS[index]
    return (
        "<!doctype html><html><head>"
        f"<title>{html.escape(topic.title)}</title></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/about'>About this knowledge base</a></nav>"
        f"<article><h1>{html.escape(topic.title)}</h1><p>{html.escape(topic.body)}</p></article>"
        "<footer>Knowledge base, all rights reserved.</footer></body></html>"
    )


def corpus_app() -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        index = int(request.match_info["n"])
        if index >= len(TOPICS):
            raise web.HTTPNotFound
        return web.Response(text=page(index), content_type="text/html")

    app = web.Application()
    app.router.add_get(r"/kb/{n:\d+}", handle)
    return app
