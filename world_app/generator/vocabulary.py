"""Word lists of the generated world, kept in the code so the world never changes when a dependency does.

Names, places and brands are our own; brands and product lines are fictional.
"""

from __future__ import annotations

FIRST_NAMES = (
    "Aaron", "Abigail", "Adrian", "Aisha", "Alan", "Alejandro", "Alex", "Alice", "Amara", "Amelia",
    "Andre", "Andrew", "Angela", "Anna", "Anthony", "Aria", "Arjun", "Ava", "Benjamin", "Bianca",
    "Brandon", "Brianna", "Caleb", "Camila", "Carlos", "Carmen", "Catherine", "Charles", "Chloe", "Christopher",
    "Claire", "Daniel", "Danielle", "David", "Deborah", "Diego", "Dmitri", "Dylan", "Edward", "Elena",
    "Elijah", "Elizabeth", "Emily", "Emma", "Eric", "Ethan", "Evelyn", "Fatima", "Felix", "Fiona",
    "Gabriel", "Grace", "Hannah", "Harper", "Hassan", "Hector", "Henry", "Isaac", "Isabel", "Ivan",
    "Jacob", "James", "Jasmine", "Jason", "Javier", "Jennifer", "Jessica", "Jonathan", "Jordan", "Joseph",
    "Joshua", "Julia", "Julian", "Kaito", "Katherine", "Kevin", "Keisha", "Laila", "Laura", "Leah",
    "Leo", "Liam", "Lily", "Lucas", "Lucia", "Madison", "Malik", "Marcus", "Maria", "Mateo",
    "Matthew", "Maya", "Megan", "Mei", "Michael", "Michelle", "Mina", "Nadia", "Natalie", "Nathan",
    "Nicholas", "Nina", "Noah", "Olivia", "Omar", "Owen", "Patricia", "Patrick", "Priya", "Rachel",
    "Rafael", "Rebecca", "Richard", "Robert", "Rosa", "Ryan", "Samantha", "Samuel", "Sara", "Sean",
    "Sofia", "Stephanie", "Steven", "Tariq", "Taylor", "Thomas", "Tiffany", "Tyler", "Valentina", "Victor",
    "Victoria", "Wei", "William", "Xavier", "Yara", "Yusuf", "Zachary", "Zoe",
)  # fmt: skip

LAST_NAMES = (
    "Abbott", "Acosta", "Adeyemi", "Aguilar", "Anderson", "Bailey", "Baker", "Banerjee", "Barnes", "Bell",
    "Bennett", "Brooks", "Bryant", "Campbell", "Carter", "Castillo", "Chen", "Clarke", "Coleman", "Collins",
    "Cooper", "Cruz", "Dasgupta", "Davies", "Diaz", "Dubois", "Edwards", "Ellis", "Evans", "Fernandez",
    "Fischer", "Fitzgerald", "Flores", "Foster", "Garcia", "Gomez", "Gonzalez", "Gordon", "Graham", "Gray",
    "Green", "Gupta", "Hall", "Hamilton", "Harris", "Hayes", "Henderson", "Hernandez", "Hill", "Hoffman",
    "Holmes", "Hughes", "Ibrahim", "Ito", "Jackson", "Jensen", "Johnson", "Jones", "Kaur", "Kelly",
    "Kennedy", "Khan", "Kim", "Kowalski", "Kumar", "Larsen", "Lee", "Lewis", "Lopez", "Martin",
    "Martinez", "Mendoza", "Meyer", "Mitchell", "Moore", "Morales", "Morgan", "Murphy", "Nakamura", "Nguyen",
    "Novak", "Okafor", "Oliveira", "Ortiz", "Owens", "Park", "Patel", "Perez", "Peterson", "Phillips",
    "Price", "Quinn", "Ramirez", "Reed", "Reyes", "Richardson", "Rivera", "Roberts", "Robinson", "Rodriguez",
    "Rossi", "Russell", "Sanchez", "Santos", "Schmidt", "Scott", "Shah", "Silva", "Singh", "Sullivan",
    "Suzuki", "Taylor", "Thompson", "Torres", "Tran", "Turner", "Vargas", "Walker", "Wang", "Ward",
    "Watson", "White", "Williams", "Wilson", "Wong", "Wright", "Yamamoto", "Young", "Zhang", "Zimmerman",
)  # fmt: skip

# Short forms people sign up with on a second account (near-duplicate customers).
NICKNAMES = {
    "Abigail": "Abby", "Alejandro": "Alex", "Alexander": "Alex", "Andrew": "Andy", "Anthony": "Tony",
    "Benjamin": "Ben", "Catherine": "Cathy", "Charles": "Charlie", "Christopher": "Chris", "Daniel": "Dan",
    "David": "Dave", "Deborah": "Debbie", "Edward": "Ed", "Elizabeth": "Liz", "Gabriel": "Gabe",
    "James": "Jim", "Jennifer": "Jen", "Jessica": "Jess", "Jonathan": "Jon", "Joseph": "Joe",
    "Joshua": "Josh", "Katherine": "Kate", "Matthew": "Matt", "Michael": "Mike", "Nathan": "Nate",
    "Nicholas": "Nick", "Patricia": "Pat", "Rebecca": "Becky", "Richard": "Rick", "Robert": "Bob",
    "Samantha": "Sam", "Samuel": "Sam", "Stephanie": "Steph", "Steven": "Steve", "Thomas": "Tom",
    "Victoria": "Tori", "William": "Will", "Zachary": "Zach",
}  # fmt: skip

EMAIL_DOMAINS = (
    "gmail.com", "gmail.com", "gmail.com", "outlook.com", "outlook.com", "yahoo.com", "icloud.com",
    "hotmail.com", "proton.me", "fastmail.com", "aol.com", "comcast.net",
)  # fmt: skip

# (city, state, first three digits of its ZIP codes, area code)
CITIES = (
    ("Austin", "TX", "787", "512"), ("Dallas", "TX", "752", "214"), ("Houston", "TX", "770", "713"),
    ("Phoenix", "AZ", "850", "602"), ("Tucson", "AZ", "857", "520"), ("Denver", "CO", "802", "303"),
    ("Boulder", "CO", "803", "720"), ("Seattle", "WA", "981", "206"), ("Tacoma", "WA", "984", "253"),
    ("Portland", "OR", "972", "503"), ("Eugene", "OR", "974", "541"), ("Sacramento", "CA", "958", "916"),
    ("San Jose", "CA", "951", "408"), ("San Diego", "CA", "921", "619"), ("Fresno", "CA", "937", "559"),
    ("Salt Lake City", "UT", "841", "801"), ("Boise", "ID", "837", "208"), ("Reno", "NV", "895", "775"),
    ("Las Vegas", "NV", "891", "702"), ("Albuquerque", "NM", "871", "505"),
    ("Minneapolis", "MN", "554", "612"), ("Madison", "WI", "537", "608"), ("Chicago", "IL", "606", "312"),
    ("Columbus", "OH", "432", "614"), ("Cleveland", "OH", "441", "216"), ("Detroit", "MI", "482", "313"),
    ("Indianapolis", "IN", "462", "317"), ("St. Louis", "MO", "631", "314"),
    ("Kansas City", "MO", "641", "816"), ("Omaha", "NE", "681", "402"), ("Nashville", "TN", "372", "615"),
    ("Atlanta", "GA", "303", "404"), ("Charlotte", "NC", "282", "704"), ("Raleigh", "NC", "276", "919"),
    ("Orlando", "FL", "328", "407"), ("Tampa", "FL", "336", "813"), ("Miami", "FL", "331", "305"),
    ("Richmond", "VA", "232", "804"), ("Baltimore", "MD", "212", "410"),
    ("Philadelphia", "PA", "191", "215"), ("Pittsburgh", "PA", "152", "412"),
    ("Newark", "NJ", "071", "973"), ("Buffalo", "NY", "142", "716"), ("Albany", "NY", "122", "518"),
    ("Hartford", "CT", "061", "860"), ("Providence", "RI", "029", "401"), ("Boston", "MA", "021", "617"),
    ("Portland", "ME", "041", "207"), ("Burlington", "VT", "054", "802"),
    ("Manchester", "NH", "031", "603"), ("Anchorage", "AK", "995", "907"), ("Honolulu", "HI", "968", "808"),
)  # fmt: skip

STREET_NAMES = (
    "Maple", "Oak", "Cedar", "Pine", "Elm", "Willow", "Birch", "Aspen", "Spruce", "Hickory",
    "Lake", "River", "Hill", "Meadow", "Park", "Forest", "Sunset", "Highland", "Valley", "Ridge",
    "Washington", "Lincoln", "Jefferson", "Madison", "Franklin", "Adams", "Jackson", "Monroe", "Grant", "Harrison",
    "Church", "Mill", "Market", "Center", "Union", "Spring", "Prospect", "Summit", "Orchard", "Garden",
)  # fmt: skip

STREET_SUFFIXES = ("St", "Ave", "Rd", "Blvd", "Ln", "Dr", "Ct", "Way", "Pl", "Terrace")

UNIT_PREFIXES = ("Apt", "Unit", "Suite", "#")

# Warehouses orders ship from (city, state).
WAREHOUSES = (("Columbus", "OH"), ("Reno", "NV"), ("Dallas", "TX"))

# Build names customers give their builds, by what the parts cost together.
BUILD_NAME_PATTERNS = {
    "budget": ("Budget 1080p build", "{first}'s first build", "Home office PC", "Kid's gaming PC", "Upgrade plan"),
    "mid": ("1440p gaming build", "{first}'s gaming rig", "Streaming PC", "Silent build", "White themed build",
            "LAN party build"),
    "high": ("4K gaming rig", "{first}'s workstation", "Render box", "4K editing rig", "Dream build"),
}  # fmt: skip
